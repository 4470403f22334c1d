"""Stored runs: ``results.parquet`` (one row per question) and ``run.json`` beside it.

Schema version 1, columns in order:

``question_id``, ``kind``, ``split``, ``question`` (string); ``relevant`` (list<string>,
labelled section ids, then evidence items as ``page:start-end``) and ``grades``
(list<int32>, their grades); ``retrieved`` (list<string>, section ids best first, at
most ``depth``; chunk ids for questions labelled with evidence) and ``scores``
(list<float64>, each one's best chunk score, as ranked); ``first_relevant_rank`` (int32, null
when no relevant section is retrieved); ``rr`` and one float64 column per measure
(``hit@3``, ``recall@3``, ``precision@3``, ``ndcg@5``, ...; null for unanswerable
questions), then ``token_recall@k``, ``token_precision@k``, ``token_iou@k`` and
``context_tokens@k`` per cutoff (float64, :mod:`receval.spans`; absent in older runs); ``rouge1_p``, ``rouge2_p``, ``rougeL_p`` (float64, ROUGE precision of
the question against its relevant sections, see :mod:`receval.overlap`; null for
unanswerable questions); ``latency_ms`` (float64, the whole search per question) and one
``latency_ms.<stage>`` column per stage (``latency_ms.bm25``, ``latency_ms.fusion``,
``latency_ms.rerank``, ``latency_ms.select``, ...); then, when the run has them,
float64 count and money columns (:mod:`receval.cost`): ``pairs_scored`` (pairs a
re-ranker scored), ``requests.<stage>``, ``input_tokens.<stage>``,
``output_tokens.<stage>``, ``cost_usd.<stage>`` and ``cost_usd``.

The Parquet key-value metadata ``receval`` and ``run.json`` hold the receval
version, schema version, config hash, dataset fingerprint, number of chunks and
timings. Files are written to a temporary name and renamed, so a reader never sees
a half-written file. Reading them back (with the schema checks) is
:mod:`receval.results`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from receval import __version__
from receval.errors import RecevalError

SCHEMA_VERSION = 1
RESULTS = "results.parquet"
RUN_JSON = "run.json"
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
FIXED_COLUMNS = frozenset(FIXED_NAMES)


def stage_column(stage: str) -> str:
    return f"{LATENCY}.{stage}"


def is_timing(column: str) -> bool:
    """``latency_ms`` and ``latency_ms.<stage>``: measured, so never compared exactly."""
    return column == LATENCY or column.startswith(LATENCY + ".")


def measure_columns(names) -> list[str]:
    """The columns that hold per-question measures (``rr``, ``hit@3``...), in order."""
    from receval.metrics import is_measure

    return [name for name in names if is_measure(name)]


def results_schema(
    measure_names: list[str], metadata: dict, stages: list[str] = (), extra: list[str] = ()
) -> pa.Schema:
    fields = [*_FIXED, *(pa.field(name, pa.float64()) for name in measure_names)]
    fields.extend(pa.field(name, pa.float64()) for name in OVERLAP)
    fields.append(pa.field(LATENCY, pa.float64()))
    fields.extend(pa.field(stage_column(stage), pa.float64()) for stage in stages)
    fields.extend(pa.field(name, pa.float64()) for name in extra)
    return pa.schema(fields, metadata={META_KEY: json.dumps(metadata, sort_keys=True).encode()})


def config_hash(resolved_config: dict) -> str:
    """sha256 of the resolved run config, keys sorted: equal configs, equal hashes."""
    blob = json.dumps(resolved_config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class WriteError(RecevalError, OSError):
    """A path the user gave (an --out file, a cache or output folder) that cannot be
    written: exit status 2 with one line, and still an ``OSError`` for callers that
    go on without writing (the embeddings cache)."""


FULL = frozenset(
    code for code in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if code is not None
)  # a full disk, a file too large, a quota: the user's to fix, not a bug


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over;
    a full disk is a ``WriteError`` naming ``path``, the temporary file removed."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:  # a folder that cannot be made or written: the user's path
        raise WriteError(
            f"{path}: cannot write it ({error.strerror or error}); choose a folder you can write to"
        ) from None
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.errno in FULL or any(os.strerror(code) in str(error) for code in FULL):  # pyarrow
            raise WriteError(
                f"{path}: cannot write it, {error.strerror or 'no space left'}; free some space "
                "or choose another folder (nothing was left half-written)"
            ) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _validity(missing: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (one bit per value, least significant first) and null count."""
    nulls = int(missing.sum())
    return (pa.py_buffer(np.packbits(~missing, bitorder="little")) if nulls else None), nulls


def arrow_column(values, type_: pa.DataType) -> pa.Array:
    """A results column (a list of Python values, ``None`` for null) as an Arrow array,
    built from numpy buffers for the schema's types (float64, int32, string and lists
    of them) and with ``pa.array`` for any other.

    Why: ``pa.array`` imports pandas when it is installed (to ask whether the values
    are a pandas object), about 50 MB and 0.25 s a run for nothing here."""
    n = len(values)
    if pa.types.is_list(type_):
        missing = np.fromiter((v is None for v in values), bool, n)
        lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        child = arrow_column([item for v in values if v is not None for item in v], type_.value_type)
        validity, nulls = _validity(missing)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets)], nulls, children=[child])
    if pa.types.is_string(type_):
        missing = np.fromiter((v is None for v in values), bool, n)
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = np.concatenate([[0], np.cumsum(np.fromiter(map(len, encoded), np.int64, n))])
        if offsets[-1] >= 2**31:  # beyond 32-bit offsets: let pyarrow choose
            return pa.array(values, type_)
        validity, nulls = _validity(missing)
        buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(type_, n, buffers, nulls)
    if type_ in (pa.float64(), pa.int32()):
        values = values.tolist() if isinstance(values, np.ndarray) else values
        missing = np.fromiter((v is None for v in values), bool, n)
        dtype = np.float64 if type_ == pa.float64() else np.int32
        data = np.fromiter((0 if v is None else v for v in values), dtype, n)
        validity, nulls = _validity(missing)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(data)], nulls)
    return pa.array(values, type_)


def write_results(
    run_dir: Path, columns: dict, measure_names: list[str], metadata: dict, stages: list[str] = (),
    extra: list[str] = (),
) -> Path:
    """Write the per-question table atomically; returns its path."""
    metadata = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **metadata}
    n_rows = len(columns["question_id"])
    columns = {**{name: [None] * n_rows for name in OVERLAP}, **columns}  # optional: null if not given
    schema = results_schema(measure_names, metadata, stages, extra)
    table = pa.table({f.name: arrow_column(columns[f.name], f.type) for f in schema}, schema=schema)
    target = Path(run_dir) / RESULTS
    atomic_write(target, lambda tmp: pq.write_table(table, tmp))
    return target


def write_run_json(run_dir: Path, info: dict) -> Path:
    info = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **info}
    target = Path(run_dir) / RUN_JSON
    text = json.dumps(info, indent=2, sort_keys=True, default=str) + "\n"
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target
