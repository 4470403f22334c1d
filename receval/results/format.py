"""Stored runs: ``results.parquet`` (one row per question) and ``run.json`` beside it.

Schema version 1, columns in order:

``question_id``, ``kind``, ``split``, ``question`` (string); ``relevant`` (list<string>,
labelled section ids, then evidence items as ``page:start-end``) and ``grades``
(list<int32>, their grades); ``retrieved`` (list<string>, section ids best first, at
most ``depth``; chunk ids for questions labelled with evidence) and ``scores``
(list<float64>, each one's best chunk score, as ranked); ``first_relevant_rank`` (int32, null
when no relevant section is retrieved); ``rr`` and one float64 column per measure
(``hit@3``, ``recall@3``, ``precision@3``, ``ndcg@5``, ``judged@5``, ...; null for unanswerable
questions), then ``token_recall@k``, ``token_precision@k``, ``token_iou@k`` and
``context_tokens@k`` per cutoff (float64, :mod:`receval.measures.spans`; absent in older runs); ``rouge1_p``, ``rouge2_p``, ``rougeL_p`` (float64, ROUGE precision of
the question against its relevant sections, see :mod:`receval.measures.overlap`; null for
unanswerable questions); ``latency_ms`` (float64, the whole search per question) and one
``latency_ms.<stage>`` column per stage (``latency_ms.bm25``, ``latency_ms.fusion``,
``latency_ms.rerank``, ``latency_ms.select``, ...); then, when the run has them,
float64 count and money columns (:mod:`receval.measures.cost`): ``pairs_scored`` (pairs a
re-ranker scored), ``requests.<stage>``, ``input_tokens.<stage>``,
``output_tokens.<stage>``, ``cost_usd.<stage>`` and ``cost_usd``.

Per-rank columns (:data:`RANKS`; absent in older runs, and in imported TREC runs and
traces): what lets ``report``, ``compare``, ``select``, ``sql`` and the Python API derive any
token budget (``hit@300tok``, :mod:`receval.scoring.budget`) from a stored run without
re-running it. Per unit of ``retrieved``, in its order: ``retrieved_at`` (list<int32>, the
1-based rank of the unit's first chunk), ``retrieved_gain`` (list<float64>, its gain: the
grade, or for evidence-labelled questions the items first found there) and
``retrieved_found`` (list<int32>, labelled units first reached there); per question
``n_units`` (int32, its labelled units) and ``ideal_gains`` (list<float64>, the ideal
ranking's gains, as nDCG reads them). Per chunk of the ranking, before units are collapsed
(at most ``depth``): ``chunk_tokens`` (list<int32>, its tokens in the unit
``chunking.max_words`` counts, heading prefix aside), ``chunk_new_tokens`` (list<int32>,
those no chunk above it holds), ``chunk_evidence_tokens`` (list<int32>, tokens of the
question's units it adds to those covered above it) and ``evidence_tokens`` (int32, the
units' tokens); ``chunk_llm_tokens`` (list<int32>, with ``metrics.tokenizer`` only: the
tokenizer's count of the same text, what the budget then counts);
``chunk_novelty`` and ``novelty_ideal`` (list<float64>, alpha-nDCG's gain at each rank and
the ideal ranking's, :mod:`receval.measures.novelty`); and for questions with nuggets,
``nuggets`` (list<string>, their ids), ``nugget_texts`` (list<string>, what each says, for
a judge of support: ``receval pool --nuggets``), ``nugget_importance`` (list<string>, ``vital`` or
``okay``) and ``nugget_at`` (list<int32>, the chunk rank from which each is supported, 0:
never; :mod:`receval.measures.nuggets`). Null for questions without labels (units) or
nuggets. ``excluded`` (int32, with ``dataset.excluded`` or ``dataset.exclude_self``): the
chunks of the question's excluded units dropped from its ranking
(:mod:`receval.datasets.excluded`).

Runs whose retriever answered with search calls (:mod:`receval.retrievers.trajectory`,
or imported traces, :mod:`receval.traces`) add, after the overlap columns:
``n_calls`` (int32), ``first_relevant_call`` (int32, 1-based, null when no call
retrieved a relevant section), ``recall_union`` (float64, share of the relevant
sections any call retrieved; null without section labels) and ``calls``
(list<struct<query: string, retrieved: list<string>, scores: list<float64>,
latency_ms: float64>>, each call collapsed to sections). A run of imported traces may
add ``documents`` (list<struct<id: string, text: string>>): retrieved ids that are no
unit of the dataset, with the text the trace gave, for ``pool`` and ``judge``.

The Parquet key-value metadata ``receval`` and ``run.json`` hold the receval
version, schema version, the run id (``run_id``: :mod:`receval.results.bond`), config
hash, dataset fingerprint, number of chunks and timings; run.json also the run's
``config`` (stored once, interpolations as written), ``filled`` (what receval's schemas
fill in that the config leaves out, dotted: a fused retriever's members, a traces
import's defaults), the run's ``label`` parts, ``measures`` and their ``means``. The flat
``params`` and the label's filled component ``nodes`` are derived from ``config`` and
``filled`` when read (:func:`receval.results.record.derived_facts`); runs written before
stored them in run.json, and read them as stored.
``chunks.json`` holds the chunks of each question's top ranks (for ``report --show``) and
the run id; ``.hydra/config.yaml`` and ``overrides.yaml`` the config and overrides as
Hydra saved them (Hydra's own files, saved before the job starts; ``reproduce`` saves
its config there too; a run started from Python has none), the run id as their first
line; ``manifest.json``, written last, the hashes of the rest and the run id
(:mod:`receval.results.manifest`). A run takes its folder before writing
(:mod:`receval.results.claim`: ``writer.lock`` while it writes). One writer writes
them all and seals the folder, :func:`receval.results.run_writer.write_run` (each file
by :mod:`receval.results.write`: a temporary name renamed, so a reader never sees a
half-written file); reading them back, checked, :func:`receval.results.door.open_run`.
"""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa

SCHEMA_VERSION = 1
RESULTS = "results.parquet"
RUN_JSON = "run.json"
MANIFEST = "manifest.json"  # written last: hashes of the rest (receval.results.manifest)
CHUNKS = "chunks.json"  # the retrieved chunks' section, offsets and text, for report --show
HYDRA_DIR = ".hydra"
CONFIG_PATH = f"{HYDRA_DIR}/config.yaml"
OVERRIDES_PATH = f"{HYDRA_DIR}/overrides.yaml"
META_KEY = b"receval"

_FIXED = [
    pa.field("question_id", pa.string(), nullable=False),
    pa.field("kind", pa.string()),
    pa.field("split", pa.string()),
    pa.field("question", pa.string()),
    pa.field("relevant", pa.list_(pa.string())),
    pa.field("grades", pa.list_(pa.int32())),
    pa.field("retrieved", pa.list_(pa.string())),
    pa.field("scores", pa.list_(pa.float64())),
    pa.field("first_relevant_rank", pa.int32()),
]


OVERLAP = ("rouge1_p", "rouge2_p", "rougeL_p")
LATENCY = "latency_ms"
FIXED_NAMES = tuple(f.name for f in _FIXED)

CALL = pa.struct([
    pa.field("query", pa.string()),
    pa.field("retrieved", pa.list_(pa.string())),
    pa.field("scores", pa.list_(pa.float64())),
    pa.field("latency_ms", pa.float64()),
])
DOCUMENT = pa.struct([pa.field("id", pa.string()), pa.field("text", pa.string())])
#: Optional columns of trajectory runs and imported traces, with their types (in order).
TRAJECTORY = {
    "n_calls": pa.int32(),
    "first_relevant_call": pa.int32(),
    "recall_union": pa.float64(),
    "calls": pa.list_(CALL),
    "documents": pa.list_(DOCUMENT),
}
FIXED_COLUMNS = frozenset(FIXED_NAMES)
#: Optional per-rank columns (see the module doc), with their types (in order).
RANKS = {
    "retrieved_at": pa.list_(pa.int32()),
    "retrieved_gain": pa.list_(pa.float64()),
    "retrieved_found": pa.list_(pa.int32()),
    "n_units": pa.int32(),
    "ideal_gains": pa.list_(pa.float64()),
    "chunk_tokens": pa.list_(pa.int32()),
    "chunk_new_tokens": pa.list_(pa.int32()),
    "chunk_evidence_tokens": pa.list_(pa.int32()),
    "evidence_tokens": pa.int32(),
    "chunk_llm_tokens": pa.list_(pa.int32()),
    "chunk_novelty": pa.list_(pa.float64()),
    "novelty_ideal": pa.list_(pa.float64()),
    "nuggets": pa.list_(pa.string()),
    "nugget_texts": pa.list_(pa.string()),
    "nugget_importance": pa.list_(pa.string()),
    "nugget_at": pa.list_(pa.int32()),
    "excluded": pa.int32(),
}
#: Per unit of ``retrieved`` (as long as it); per chunk rank (as long as each other); per nugget.
UNIT_RANKS = ("retrieved_at", "retrieved_gain", "retrieved_found")
CHUNK_RANKS = ("chunk_tokens", "chunk_new_tokens", "chunk_evidence_tokens", "chunk_llm_tokens", "chunk_novelty")
NUGGET_LISTS = ("nuggets", "nugget_texts", "nugget_importance", "nugget_at")
IMPORTANCE = ("vital", "okay")  # TREC RAG's nugget labels


def stage_column(stage: str) -> str:
    return f"{LATENCY}.{stage}"


def is_timing(column: str) -> bool:
    """``latency_ms`` and ``latency_ms.<stage>``: measured, so never compared exactly."""
    return column == LATENCY or column.startswith(LATENCY + ".")


def measure_columns(names) -> list[str]:
    """The columns that hold per-question measures (``rr``, ``hit@3``...), in order."""
    from receval.scoring.declared import is_measure

    return [name for name in names if is_measure(name)]


def results_schema(
    measure_names: list[str], metadata: dict, stages: list[str] = (), extra: list[str] = (),
    optional: tuple[str, ...] = (),
) -> pa.Schema:
    """``optional``: the :data:`TRAJECTORY` and :data:`RANKS` columns the run has."""
    fields = [*_FIXED, *(pa.field(name, pa.float64()) for name in measure_names)]
    fields.extend(pa.field(name, pa.float64()) for name in OVERLAP)
    fields.extend(pa.field(name, kind) for name, kind in TRAJECTORY.items() if name in optional)
    fields.extend(pa.field(name, kind) for name, kind in RANKS.items() if name in optional)
    fields.append(pa.field(LATENCY, pa.float64()))
    fields.extend(pa.field(stage_column(stage), pa.float64()) for stage in stages)
    fields.extend(pa.field(name, pa.float64()) for name in extra)
    return pa.schema(fields, metadata={META_KEY: json.dumps(metadata, sort_keys=True).encode()})


def config_hash(resolved_config: dict) -> str:
    """sha256 of the resolved run config, keys sorted: equal configs, equal hashes."""
    blob = json.dumps(resolved_config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
