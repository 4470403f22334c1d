"""Stored runs as the report, compare and reproduce steps see them.

- :func:`find_runs`: paths -> run directories. A run directory holds ``results.parquet``;
  a sweep directory holds numbered job folders (``0``, ``1``, ... in job-number
  order); several paths are taken in the order given. A job folder without
  ``results.parquet`` (an incomplete job) is skipped with a warning on stderr.
- :func:`load_runs`: each run's per-question table, ``run.json`` and saved config
  (``.hydra/config.yaml``; ``run.json``'s copy when that is missing).
- :func:`differing_params`: the flattened config keys whose values differ between
  runs (``retriever.name``, ``chunking.max_words``), shown by short names
  (``retriever``, ``max_words``) -- see :func:`short_names`.
- :func:`select`: runs matching ``key=value[,key=value]`` selectors
  (``retriever=tfidf,max_words=120``), keys given by short or dotted name.
- :func:`bootstrap_settings`: the saved ``bootstrap`` config, overridable.

Nothing here retrieves or scores: everything is read from stored runs.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml
from omegaconf import OmegaConf

from receval import config as config_schema
from receval import metrics as measures
from receval import trust
from receval.errors import RecevalError, RunError
from receval.metrics import measures_for
from receval.store import (
    FIXED_COLUMNS,
    META_KEY,
    RESULTS,
    RUN_JSON,
    SCHEMA_VERSION,
    StoredRun,
    measure_columns,
    read_run,
)

HYDRA_DIR = ".hydra"
CONFIG_YAML = "config.yaml"
OVERRIDES_YAML = "overrides.yaml"


def warn(message: str) -> None:
    print(f"receval: warning: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------- discovery


def _job_dirs(path: Path) -> list[Path]:
    """Numbered subfolders of a sweep directory, in job-number order."""
    jobs = [p for p in path.iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(jobs, key=lambda p: int(p.name))


def _looks_like_job(path: Path) -> bool:
    return (path / HYDRA_DIR).is_dir() or (path / RUN_JSON).is_file()


def find_runs(paths: list[str | Path]) -> list[Path]:
    """Run directories named by ``paths`` (run dirs or sweep dirs), in order.

    Incomplete jobs (no ``results.parquet``) are skipped with a warning; a path that
    is missing or neither a run nor a sweep is an error; so is finding no run at all.
    """
    if not paths:
        raise RunError("no runs given: name a run directory or a sweep directory")
    found: list[Path] = []
    seen: set[Path] = set()

    def add(run_dir: Path) -> None:
        key = run_dir.resolve()
        if key not in seen:
            seen.add(key)
            found.append(run_dir)

    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise RunError(f"{path}: no such directory")
        if not path.is_dir():
            raise RunError(f"{path}: not a directory; give a run or sweep directory")
        if (path / RESULTS).is_file():
            add(path)
            continue
        jobs = _job_dirs(path)
        if jobs:
            for job in jobs:
                if (job / RESULTS).is_file():
                    add(job)
                else:
                    warn(f"{job}: no {RESULTS} (incomplete job?); skipped")
            continue
        if _looks_like_job(path):
            warn(f"{path}: no {RESULTS} (incomplete job?); skipped")
            continue
        raise RunError(
            f"{path}: not a run directory (no {RESULTS}) nor a sweep directory "
            "(no numbered job folders)"
        )
    if not found:
        raise RunError(
            "no complete runs in " + ", ".join(str(p) for p in paths) + " (every job was skipped)"
        )
    return found


# ----------------------------------------------------------------- configs


def _yaml_loader():
    """OmegaConf's own YAML loader (its float and no-timestamp rules), or None."""
    try:
        from omegaconf._utils import get_yaml_loader

        return get_yaml_loader()
    except ImportError:  # pragma: no cover - a future omegaconf
        return None


_YAML_LOADER = _yaml_loader()


def _load_yaml_config(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
        if "${" not in text and _YAML_LOADER is not None:
            # nothing to resolve: the same parse as OmegaConf.load without building a
            # DictConfig (half the time, which counts over hundreds of runs)
            data = yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a SafeLoader subclass
            if isinstance(data, dict):
                data.pop("hydra", None)
                return data
        conf = OmegaConf.create(text)
    except Exception as error:  # noqa: BLE001 - any parse problem is the user's file
        raise RunError(f"{path}: cannot be read as a config ({error})") from None
    data = OmegaConf.to_container(conf, resolve=False)  # a stored run is data: never evaluated
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a config mapping")
    data.pop("hydra", None)
    return data


def load_config(run_dir: Path, info: dict | None = None) -> dict:
    """The run's saved config as plain data: ``.hydra/config.yaml``, else run.json's."""
    path = Path(run_dir) / HYDRA_DIR / CONFIG_YAML
    if path.is_file():  # interpolations: the values run.json saved (receval.trust)
        return trust.fill_interpolations(_load_yaml_config(path), (info or {}).get("config"), path, strict=False)
    config = (info or {}).get("config")
    return dict(config) if isinstance(config, dict) else {}


def load_overrides(run_dir: Path) -> list[str]:
    path = Path(run_dir) / HYDRA_DIR / OVERRIDES_YAML
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    return [str(item) for item in data] if isinstance(data, list) else []


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` -> ``{"a.b": 1, "c": (1, 2)}`` (lists as tuples)."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(data, list):
        return {prefix[:-1]: tuple(data)}
    return {prefix[:-1]: data}


def format_value(value: Any) -> str:
    """A config value as people type it: null, true, 120, [1, 3]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


_MISSING = object()
_DEFAULTS: dict[str, Any] | None = None


def schema_defaults() -> dict[str, Any]:
    """Flattened defaults of receval's config schema (``???`` for required values)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        schema = OmegaConf.structured(config_schema.RecevalConfig)
        _DEFAULTS = flatten(OmegaConf.to_container(schema, resolve=False))
    return dict(_DEFAULTS)


def _override_key(override: str) -> str:
    key = override.split("=", 1)[0].lstrip("+~")
    return key.split("@", 1)[0]


def differing_params(flats: list[dict[str, Any]], overrides: list[list[str]] | None = None) -> list[str]:
    """Dotted keys whose values differ between the runs.

    Ordered as the command line named them (``retriever=bm25,tfidf
    chunking.max_words=20,40`` -> retriever first), then in config order.
    """
    keys: list[str] = []
    for flat in flats:
        keys.extend(k for k in flat if k not in keys)
    differ = [
        k for k in keys if len({repr(flat.get(k, _MISSING)) for flat in flats}) > 1
    ]
    named: list[str] = []
    for run_overrides in overrides or []:
        for override in run_overrides:
            key = _override_key(override)
            if key not in named:
                named.append(key)

    def rank(key: str) -> tuple[int, int]:
        for i, name in enumerate(named):
            if key == name or key.startswith(name + "."):
                return (i, keys.index(key))
        return (len(named), keys.index(key))

    return sorted(differ, key=rank)


def short_name(key: str) -> str:
    parts = key.split(".")
    if len(parts) > 1 and parts[-1] == "name":
        return parts[-2]
    return parts[-1]


def short_names(keys: list[str]) -> dict[str, str]:
    """Display names: ``retriever.name`` -> ``retriever``, ``chunking.max_words`` ->
    ``max_words``; the dotted key wherever two short names would collide."""
    shorts = [short_name(k) for k in keys]
    return {k: (s if shorts.count(s) == 1 else k) for k, s in zip(keys, shorts)}


# ----------------------------------------------------------------- runs


@dataclass
class Run:
    """A stored run, read back: per-question table, run.json, saved config."""

    run_dir: Path
    table: pa.Table
    metadata: dict
    info: dict
    config: dict
    overrides: list[str] = field(default_factory=list)

    @cached_property
    def flat(self) -> dict[str, Any]:
        """Dotted config keys; a key the saved config lacks (a run made before that
        setting existed) takes the schema's default, so it is no difference."""
        if not self.config:
            return {}
        return {**schema_defaults(), **flatten(self.config)}

    @cached_property
    def ids(self) -> np.ndarray:
        return np.asarray(self.table.column("question_id").to_pylist(), dtype=object)

    @cached_property
    def ids_digest(self) -> bytes:
        return hashlib.blake2b("\x1f".join(self.ids).encode(), digest_size=16).digest()

    @property
    def n_chunks(self) -> int | None:
        value = self.info.get("n_chunks", self.metadata.get("n_chunks"))
        return int(value) if value is not None else None

    @property
    def measure_names(self) -> list[str]:
        """Stored per-question measures (timings such as ``latency_ms.bm25`` are not)."""
        return measure_columns(self.table.column_names)

    def values(self, column: str) -> np.ndarray:
        """A numeric column as float64, null -> NaN."""
        col = self.table.column(column)
        if col.null_count:
            col = pc.fill_null(pc.cast(col, pa.float64()), float("nan"))
        return np.asarray(col.to_numpy(), dtype=np.float64)

    def strings(self, column: str) -> list[str | None]:
        return self.table.column(column).to_pylist()

    def filtered(self, table: pa.Table) -> "Run":
        return Run(self.run_dir, table, self.metadata, self.info, self.config, self.overrides)


def read_info(run_dir: Path) -> dict:
    path = run_dir / RUN_JSON
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        data, why = None, str(error)
    else:
        why = f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data, dict):  # written last and atomically: this job did not end cleanly
        raise RunError(
            f"{path}: not a run's facts ({why}); re-run the job (the same command resumes "
            f"it), or delete {RUN_JSON} to read {RESULTS} alone"
        )
    return data


#: Columns the report and compare never read: the bulk of a results file.
UNUSED_COLUMNS = frozenset({"relevant", "grades", "retrieved", "scores"})


def read_results(run_dir: str | Path, skip: frozenset[str] = UNUSED_COLUMNS) -> StoredRun:
    """:func:`receval.store.read_run` without the ``skip`` columns (much less to read).

    Only a file whose receval metadata is readable and of a known schema takes the
    short way; anything else goes through ``read_run``, which says what is wrong.
    """
    path = Path(run_dir) / RESULTS
    try:
        schema = pq.read_schema(path)
        metadata = json.loads((schema.metadata or {})[META_KEY])
        version = metadata["schema_version"]
        if isinstance(version, int) and version <= SCHEMA_VERSION and FIXED_COLUMNS <= set(schema.names):
            names = [n for n in schema.names if n not in skip]
            return StoredRun(Path(run_dir), pq.read_table(path, columns=names), metadata)
    except (OSError, KeyError, TypeError, ValueError, pa.ArrowException):
        pass
    return read_run(run_dir)


def load_run(run_dir: str | Path) -> Run:
    """Read one run directory (a RunError if it is not one)."""
    stored: StoredRun = read_results(run_dir)
    run_dir = Path(run_dir)
    info = read_info(run_dir)
    ids = stored.table.column("question_id").to_pylist()
    if len(set(ids)) != len(ids):  # report and compare both pair rows by id
        raise RunError(f"{run_dir}: question ids repeat; cannot pair questions by id")
    return Run(
        run_dir=run_dir,
        table=stored.table,
        metadata=stored.metadata,
        info=info,
        config=load_config(run_dir, info),
        overrides=load_overrides(run_dir),
    )


def load_runs(paths: list[str | Path], qrels: str | Path | None = None) -> list[Run]:
    """Stored runs from run or sweep directories; with ``qrels``, a path that is a
    file is an external TREC run, scored like the stored ones (:mod:`receval.external`)."""
    files = [p for p in paths if Path(p).is_file()]
    if files and qrels is None:
        raise RunError(
            f"{files[0]}: a file, not a run directory; to report an external TREC run "
            "beside stored ones, give its judgements with --qrels FILE"
        )
    stored = [load_run(p) for p in find_runs([p for p in paths if not Path(p).is_file()])] if len(files) < len(paths) else []
    return stored + [external_run(f, qrels, stored) for f in files]


def external_run(path: str | Path, qrels: str | Path, stored: list[Run]) -> Run:
    """An external TREC run at the stored runs' depth and cutoffs (10 and 1,3,5,10 alone)."""
    from receval.external import external_table
    from receval.trec import run_tags

    depths = {int(r.flat.get("depth", 10)) for r in stored} or {10}
    measures = list(dict.fromkeys(m for r in stored for m in r.measure_names))
    if not measures:
        measures = [m.name for m in measures_for([1, 3, 5, 10])]
    table = external_table(path, qrels, max(depths), measures)
    tag = (run_tags(path) or [Path(path).name])[0]
    # shown as the first stored run's config under another retriever name: the same
    # questions and depth; receval knows nothing else about the system
    config = copy.deepcopy(stored[0].config) if stored else {}
    config.setdefault("retriever", {})["name"] = f"{tag} (TREC run)"
    return Run(run_dir=Path(path), table=table, metadata={"external_run": str(path)}, info={}, config=config)


def load_one(path: str | Path, what: str = "run") -> Run:
    """Exactly one run directory (a sweep is refused, naming its jobs)."""
    path = Path(path)
    if path.is_dir() and not (path / RESULTS).is_file():
        jobs = _job_dirs(path)
        if jobs:
            raise RunError(
                f"{path}: a sweep of {len(jobs)} jobs, not one run; give {what} as one "
                f"of its job folders, e.g. {jobs[0]}"
            )
    if not path.exists():
        raise RunError(f"{path}: no such directory")
    return load_run(path)


# ----------------------------------------------------------------- filters and measures


def parse_where(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise RecevalError(f"--where {item!r}: use COLUMN=VALUE, e.g. split=test")
        column, value = item.split("=", 1)
        pairs.append((column.strip(), value.strip()))
    return pairs


def filter_questions(runs: list[Run], where: list[tuple[str, str]]) -> list[Run]:
    """Keep only the questions whose ``column`` equals ``value`` (all pairs must hold)."""
    if not where:
        return runs
    out = []
    for run in runs:
        table = run.table
        mask = None
        for column, value in where:
            if column not in table.column_names:
                raise RecevalError(
                    f"--where {column}={value}: no column {column!r} in {run.run_dir}; "
                    "columns: " + ", ".join(table.column_names)
                )
            this = pc.fill_null(pc.equal(pc.cast(table.column(column), pa.string()), value), False)
            mask = this if mask is None else pc.and_(mask, this)
        kept = table.filter(mask)
        if kept.num_rows == 0:
            column, value = where[0] if len(where) == 1 else (None, None)
            present = ""
            if column is not None:
                values = sorted({str(v) for v in table.column(column).to_pylist()})
                present = f"; {column} values present: " + ", ".join(values[:20])
            cond = " and ".join(f"{c}={v}" for c, v in where)
            raise RecevalError(f"no questions with {cond} in {run.run_dir}{present}")
        out.append(run.filtered(kept))
    return out


def canonical_measure(name: str, runs: list[Run], option: str = "--metrics") -> str:
    """``MRR`` -> ``rr``; an unknown measure or one not stored in a run is an error."""
    try:
        canonical = measures.parse_measure(name).name
    except ValueError as error:
        canonical = name.strip().lower()
        if not measures.is_token_measure(canonical):
            raise RecevalError(
                f"{option}: {error}; or token_recall@k, token_precision@k, token_iou@k, context_tokens@k"
            ) from None
    for run in runs:
        if canonical not in run.table.column_names:
            stored = ", ".join(run.measure_names)
            raise RecevalError(
                f"{option}: {canonical} is not stored in {run.run_dir} (stored: {stored}); "
                "add its cutoff to metrics.ks and re-run"
            )
    return canonical


def measure_label(name: str) -> str:
    if name == "rr":
        return "MRR"
    if name.startswith("ndcg@"):
        return "nDCG@" + name[5:]
    return name


# ----------------------------------------------------------------- selectors


_SPLIT = re.compile(r",(?=\s*[\w.]+\s*=)")


def parse_selector(text: str) -> list[tuple[str, str]]:
    """``retriever=tfidf,max_words=120`` -> [("retriever", "tfidf"), ("max_words", "120")]."""
    pairs = []
    for part in _SPLIT.split(text):
        if "=" not in part or not part.split("=", 1)[0].strip():
            raise RecevalError(
                f"selector {text!r}: use KEY=VALUE[,KEY=VALUE], e.g. retriever=tfidf,max_words=120"
            )
        key, value = part.split("=", 1)
        pairs.append((key.strip(), value.strip()))
    return pairs


def _resolve_key(name: str, runs: list[Run], differ: list[str]) -> str:
    keys: list[str] = []
    for run in runs:
        keys.extend(k for k in run.flat if k not in keys)
    if name in keys:
        return name
    if f"{name}.name" in keys:
        return f"{name}.name"
    matches = [k for k in keys if short_name(k) == name or k.endswith("." + name)]
    if len(matches) > 1:
        narrowed = [k for k in matches if k in differ]
        if len(narrowed) == 1:
            return narrowed[0]
        raise RecevalError(f"selector key {name!r} is ambiguous: " + ", ".join(matches))
    if not matches:
        shown = ", ".join(short_names(differ).values()) or "nothing (the configs are equal)"
        raise RecevalError(f"selector key {name!r} is not a config key; the runs differ in: {shown}")
    return matches[0]


def _value_matches(value: Any, wanted: str) -> bool:
    if format_value(value) == wanted or str(value) == wanted:
        return True
    try:
        parsed = yaml.safe_load(wanted)
    except yaml.YAMLError:
        return False
    if isinstance(parsed, list):
        parsed = tuple(parsed)
    return type(parsed) is not str and parsed == value


def select(runs: list[Run], selector: str) -> list[int]:
    """Indices of the runs whose config matches every ``key=value`` of ``selector``."""
    differ = differing_params([r.flat for r in runs], [r.overrides for r in runs])
    wanted = [(_resolve_key(k, runs, differ), v) for k, v in parse_selector(selector)]
    return [
        i
        for i, run in enumerate(runs)
        if all(key in run.flat and _value_matches(run.flat[key], v) for key, v in wanted)
    ]


def describe(run: Run, keys: list[str]) -> str:
    names = short_names(keys)
    params = ", ".join(f"{names[k]}={format_value(run.flat.get(k))}" for k in keys)
    return f"{run.run_dir}" + (f" ({params})" if params else "")


def select_one(runs: list[Run], selector: str, option: str = "--baseline") -> tuple[int | None, Run]:
    """The one run a selector names: a run directory, or ``key=value`` matching one run.

    Returns ``(index into runs or None, run)``; a run directory outside ``runs`` is
    loaded (index None). Several or no matches are an error listing the candidates.
    """
    path = Path(selector)
    if "=" not in selector or path.exists():
        if not path.exists():
            raise RecevalError(
                f"{option} {selector!r}: no such run directory; give a run directory "
                "or KEY=VALUE, e.g. retriever=tfidf"
            )
        resolved = path.resolve()
        for i, run in enumerate(runs):
            if run.run_dir.resolve() == resolved:
                return i, run
        return None, load_one(path, what=option)
    matched = select(runs, selector)
    differ = differing_params([r.flat for r in runs], [r.overrides for r in runs])
    if not matched:
        raise RecevalError(
            f"{option} {selector}: matches none of the {len(runs)} runs; they are: "
            + "; ".join(describe(r, differ) for r in runs)
        )
    if len(matched) > 1:
        raise RecevalError(
            f"{option} {selector}: matches {len(matched)} runs, narrow it with a second "
            "key (e.g. ...,max_words=120): "
            + "; ".join(describe(runs[i], differ) for i in matched)
        )
    return matched[0], runs[matched[0]]


# ----------------------------------------------------------------- bootstrap settings


@dataclass(frozen=True)
class BootSettings:
    n_resamples: int = 2000
    level: float = 0.95
    seed: int = 0
    method: str = "percentile"

    def kwargs(self) -> dict:
        return {
            "n_resamples": self.n_resamples,
            "level": self.level,
            "seed": self.seed,
            "method": self.method,
        }

    def describe(self) -> str:
        return (
            f"{self.level:.0%} CI: {self.method} bootstrap over questions, "
            f"{self.n_resamples} resamples, seed {self.seed}"
        )


def bootstrap_settings(
    runs: list[Run],
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
) -> BootSettings:
    """The first run's saved ``bootstrap`` config, with command-line overrides."""
    defaults = config_schema.BootstrapConfig()
    saved = [r.config.get("bootstrap") or {} for r in runs]
    first = saved[0] if saved else {}
    values = {
        "n_resamples": first.get("n_resamples", defaults.n_resamples),
        "level": first.get("level", defaults.level),
        "seed": first.get("seed", defaults.seed),
        "method": first.get("method", defaults.method),
    }
    given = {"n_resamples": n_resamples, "seed": seed, "level": level, "method": method}
    differ = [
        k for k in values if given[k] is None and len({repr(s.get(k, values[k])) for s in saved}) > 1
    ]
    if differ:
        warn(
            "runs differ in saved bootstrap settings (" + ", ".join(differ) + "); using the "
            f"first run's ({runs[0].run_dir}); set them with --n-resamples/--seed/--level"
        )
    values.update({k: v for k, v in given.items() if v is not None})
    problems = []
    if not isinstance(values["n_resamples"], int) or values["n_resamples"] < 1:
        problems.append(f"n_resamples={values['n_resamples']}: use an integer >= 1")
    if not isinstance(values["seed"], int) or values["seed"] < 0:
        problems.append(f"seed={values['seed']}: use an integer >= 0")
    if not isinstance(values["level"], int | float) or not 0 < values["level"] < 1:
        problems.append(f"level={values['level']}: use a value between 0 and 1, e.g. 0.95")
    if values["method"] not in ("percentile", "bca"):
        problems.append(f"method={values['method']!r}: use percentile or bca")
    if problems:
        raise RecevalError(["bootstrap " + p for p in problems])
    return BootSettings(
        n_resamples=int(values["n_resamples"]),
        level=float(values["level"]),
        seed=int(values["seed"]),
        method=str(values["method"]),
    )


# ----------------------------------------------------------------- command lines


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one ``receval: error:`` line and exit status 2."""

    def error(self, message: str):  # noqa: D102
        raise RecevalError(f"{self.prog}: {message} (see --help)")


def add_question_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--split", help="score only the questions of this split (same as --where split=VALUE)"
    )
    parser.add_argument(
        "--where", action="append", default=[], metavar="COLUMN=VALUE",
        help="score only the questions whose COLUMN equals VALUE (repeatable), e.g. kind=direct",
    )


def question_filters(args) -> list[tuple[str, str]]:
    where = parse_where(args.where)
    if args.split:
        where.insert(0, ("split", args.split))
    return where


def add_bootstrap_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("bootstrap (default: the run's saved bootstrap config)")
    group.add_argument("--n-resamples", type=int, help="bootstrap resamples, e.g. 2000")
    group.add_argument("--seed", type=int, help="bootstrap seed (same seed, same intervals)")
    group.add_argument("--level", type=float, help="confidence level, e.g. 0.95")
    group.add_argument("--method", choices=("percentile", "bca"), help="interval method")
