"""Production traces in: OpenInference retriever spans imported as a stored run.

``python -m receval.traces traces.path=spans.jsonl dataset=library hydra.run.dir=DIR``
reads one span per JSON line (:mod:`.spans`: flat, nested or OTLP attributes; only
``RETRIEVER`` spans), matches each trace to a question of the dataset
(:func:`.job.match`: a ``receval.question_id`` attribute, else a span's query equal to
the question's text, whitespace normalised) and writes DIR as an ordinary run
(:func:`.job.import_traces`, through :func:`receval.results.run_writer.write_run`):

- document ids are the dataset's section ids (a chunk id ``<section>@<n>`` stands for
  its section); an unknown id is a unit of its own, kept with the span's
  ``document.content`` in the ``documents`` column, so ``pool`` can show it and
  ``judge`` label it;
- the retriever spans of one trace (same trace id) are the question's calls, in start
  order: stored with the trajectory columns (``calls``, ``n_calls``,
  ``first_relevant_call``, ``recall_union``); the final ranking, which every measure
  scores, is the calls' union in call order, cut to ``depth``; a document's place in
  its span is its rank, a missing ``document.score`` is stored as 0;
- questions labelled with evidence spans are judged by the character spans of the
  sections retrieved (``relevance.coverage``), as a run with whole-section chunks is;
- latency: each call's end minus start time; a question's ``latency_ms`` is their sum;
- the run holds the questions a trace matched; spans no question matched are counted
  and named (stderr, run.json ``traces``), as are traces that repeat a question (the
  first is kept) and questions without a trace.

run.json's ``config`` is a run config (``name: traces``, the dataset, depth, cutoffs,
bootstrap), so report, compare, pool and judge read the run as any other; Hydra's
``.hydra`` folder is not written (``hydra.output_subdir: null``).
"""

from receval.traces.job import Summary, check_config, import_traces, match
from receval.traces.spans import Document, Span, read_spans

__all__ = ["Document", "Span", "Summary", "check_config", "import_traces", "match", "read_spans"]
