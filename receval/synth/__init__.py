"""Synthetic questions: ask a chat model for a question about each section.

``receval synth synth.base_url=... synth.model=... [overrides]`` writes a
questions file that ``receval dataset.questions=FILE`` reads as it is.

What is generated. The *units* are the dataset's sections (``synth.unit=section``)
or their chunks (``synth.unit=chunk``, cut by the ``chunking`` group, without the
heading prefix); labels are always section ids. ``synth.limit`` keeps a sample of
that many units drawn with ``synth.seed`` (a permutation prefix, so a larger limit
keeps every unit a smaller one chose), in dataset order. For each unit
``synth.per_section`` questions are asked for, one request each; the second and
later requests list the questions already written for that unit and ask for a
different one. Styles (``synth.style``):

- ``direct``: a question the passage answers, understandable without the passage;
- ``paraphrase``: the same, worded without the passage's distinctive words, as a
  user who never saw the page would ask (lexical overlap is what makes synthetic
  questions easy; see :mod:`receval.measures.overlap`);
- ``multi``: a question that needs two passages: each unit is paired with a unit of
  another section, from the same page when the page has one, otherwise from any
  page; the partner is drawn from ``synth.seed`` and the unit's id alone (it does
  not change with ``limit``). Labelled with both sections.

Replies. The model must answer with the JSON object ``{"question", "answer",
"quotes"}`` (structured output, see :mod:`receval.clients.chat` for the fallbacks and
retries): non-empty strings, a question with a word, and quotes copied from the
passage, each found in it (:mod:`.quotes`; for ``multi`` one per passage), else the
reply is asked again. A question that near-duplicates one already in the file is
asked again, with the repeated question listed among those already written, up to
``1 + synth.retries`` attempts, then dropped and counted; a set more than half
duplicates or empty questions is refused (:mod:`.dedup`). A unit whose request still
fails after the retries is reported on stderr (``receval: warning: skipped section
'<id>': <reason>``) and skipped; ``synth.max_failures`` units failing in a row stop the
job (exit status 2), as do a wrong key, URL or model and an unreachable server. At the
end the one failure rule of :mod:`receval.clients.failures` holds: no question written,
or more than half of those asked for lost, is exit status 2 naming the last reason.

The file (``synth.out``), one JSON object per line::

    {"id": "syn-direct-<16 hex>", "kind": "direct", "question": "...",
     "relevant": ["fines#daily-rates"], "spans": [{"page": "fines", "start": 901, "end": 962}],
     "split": "dev", "answer": "...", "quotes": ["..."],
     "provenance": {"model", "style", "prompt_hash", "temperature", "seed",
                    "source": {"dataset", "unit", "ids", "spans", "n", "text_sha256"}}}

- ``spans``: where the answer is: each quote's characters in its page (an evidence
  label, :mod:`receval.datasets.evidence`), so the question is scored against its answer, not
  its whole unit; a chunk-size sweep is then not biased toward the size that wrote
  the questions (:mod:`.quotes`). Left out when the unit's offsets are not known.
  ``provenance.source.spans``: the units' passages.
- ``id``: ``syn-<style>-`` + the first 16 hex of sha256 over the unit id (and, for
  ``multi``, the partner's id) and the question's number ``n`` (0-based), joined by
  NUL bytes. The same unit, style and ``n`` always give the same id.
- ``split``: ``dev`` when the first 8 hex digits of sha256(id), read as a fraction
  of 16**8, fall below ``synth.dev_fraction``; otherwise ``test``.
- ``prompt_hash``: the first 12 hex of sha256 over the prompt templates of the
  style: it changes exactly when the wording sent to the model changes.
- ``source.text_sha256``: first 16 hex of sha256 over the passage text(s), to see
  later whether a page changed since its question was written.

Answers. Every request goes through the cached-call layer (:mod:`receval.clients.calls`,
under ``synth.cache_dir``, null: ``$RECEVAL_CACHE_DIR`` or ``.cache/receval``), keyed by
the endpoint, the model, temperature, seed, the reply's schema, the messages and, for a
re-ask of a repeated question, the attempt number: a rerun of the same synth (into a new
file, or resuming one) replays its answers, sends nothing and writes the same questions;
another server with the same model name is asked.

Resuming. Records are appended one line at a time, flushed and fsync'ed, in the
order they finish. A rerun reads the file first and skips every id already in it,
so an interrupted job loses at most the line being written, and changing
``per_section`` or ``limit`` upwards only adds. An incomplete last line (a crash
mid-write) is cut off with a warning; any other unreadable line is an error naming
it. Questions of other styles in the same file are left alone. The API key never
reaches the file, the saved config or a message: it is read from the environment
variable named by ``synth.api_key_env`` when each request is sent.

Layout: :mod:`.prompts` (what is sent), :mod:`.units` (what questions are written
from), :mod:`.quotes` (the answer's span), :mod:`.dedup` (near-duplicates, refusal),
:mod:`.records` (the file), :mod:`.job` (config checks and the request loop),
``__main__`` (the Hydra shell).
"""

from receval.synth.job import Summary, check_config, generate, make_client, summary_line
from receval.synth.prompts import QA_SCHEMA, build_messages, prompt_hash, validate_reply
from receval.synth.records import QuestionsFile, make_record, record_id, split_of
from receval.synth.units import Unit, make_units, pick_partners, select_units

__all__ = [
    "QA_SCHEMA", "QuestionsFile", "Summary", "Unit", "build_messages", "check_config",
    "generate", "make_client", "make_record", "make_units", "pick_partners", "prompt_hash", "record_id",
    "select_units", "split_of", "summary_line", "validate_reply",
]
