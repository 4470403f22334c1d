"""What stored runs send to an experiment tracker (``receval export RUNS --to
mlflow``): pure data, no tracker imported here; :mod:`receval.render.mlflow` logs it.

- One :class:`TrackedSweep` per sweep folder (a run folder given alone is a sweep of
  one), one :class:`TrackedRun` per job, in sweep order.
- ``params``: the job's saved config flattened (``retriever.k1``, ``chunking.max_words``),
  each value through :func:`param_value` (a URL as
  :func:`receval.core.formatting.shown` shows it; a secret, as the run spec's
  :func:`receval.core.secrets.looks_like_key` decides, hidden). The sweep's params are those every job shares.
- ``metrics``: every measure's mean with its interval bounds (``hit_at_3``,
  ``hit_at_3_lo``, ``hit_at_3_hi``: the report's numbers, from the same
  :func:`receval.analysis.summary.summaries`), the paired difference against the
  baseline with its interval (``diff_hit_at_3``, ``_lo``, ``_hi``; for each measure),
  latency (``latency_ms_p50``, ``latency_ms_p95``, per stage ``latency_ms.bm25_p50``),
  costs (``usd_per_1000``, ``pairs_per_question``, ``index_usd``), ``n_questions``
  and ``n_chunks``. Tracker names allow no ``@``: ``hit@3`` is ``hit_at_3``.
- ``identity``: the sha256 of the job's ``results.parquet`` (written once, so the same
  stored run has the same identity wherever it is copied); a sweep's is the hash of its
  jobs' identities. A second export looks them up and adds nothing.
- ``artifacts``: ``results.parquet`` as stored (its sha256 is the identity) and
  ``run.json`` as read, every string through the params' secret rule
  (:func:`shown_setting`): a key pasted into the config reaches neither params nor
  artifacts. A file of the run folder that is a symlink leading out of the folder
  (``run.json`` -> a credentials file) is refused, never uploaded.
- Default measures: the report's (:data:`receval.analysis.summary.DEFAULT_METRICS`)
  and nDCG@10 and MAP (:data:`TRACKER_METRICS`), those every run stores.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from receval.analysis import filters
from receval.analysis.pairs import paired
from receval.analysis.settings import bootstrap_settings
from receval.analysis.summary import DEFAULT_METRICS, RunSummary, measure_names, summaries
from receval.core.errors import RecevalError
from receval.core.secrets import (
    credential_name,
    cut,
    looks_like_key,
    network_url,
)
from receval.core.formatting import shown
from receval.results import manifest
from receval.results.configs import flatten, format_value
from receval.results.door import contained
from receval.results.format import RESULTS, RUN_JSON
from receval.results.labels import naming_of
from receval.results.stored import Run

MAX_PARAM = 6000  # characters of a parameter value MLflow keeps
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_\-. :/]")  # what MLflow allows in a key
_DIGEST = re.compile(r"[0-9a-f]{64}")  # receval's own sha256 (config_hash, dataset_fingerprint)
#: The tracker's default measures: the report's columns, and nDCG@10 and MAP (``ap``).
TRACKER_METRICS = tuple(dict.fromkeys((*DEFAULT_METRICS, "ndcg@10", "ap")))


@dataclass(frozen=True)
class Artifact:
    """One file the tracker keeps: ``data`` written as ``name``, or the run's file
    ``source`` copied (then checked against ``sha256``, the run's identity)."""

    name: str
    data: bytes | None = None
    source: Path | None = None
    sha256: str = ""


@dataclass
class TrackedRun:
    """One job as the tracker holds it."""

    run_dir: str
    identity: str
    name: str  # the run's label (receval.results.labels)
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    artifacts: list[Artifact]


@dataclass
class TrackedSweep:
    """One sweep: the parent of its jobs."""

    sweep_dir: str
    identity: str
    name: str
    params: dict[str, str]
    tags: dict[str, str]
    runs: list[TrackedRun] = field(default_factory=list)


def tracker_name(name: str) -> str:
    """A measure or key as a tracker name: ``@`` as ``_at_`` (``hit@3`` -> ``hit_at_3``),
    any other character MLflow refuses as ``_``."""
    return _NOT_A_NAME.sub("_", name.replace("@", "_at_"))


def safe_name(key: str) -> str:
    """A dotted setting name with each part that looks like a key (a key pasted as a
    config key's name) as ``hidden``: a name is sent to the tracker as a value is."""
    return ".".join("hidden" if looks_like_key(part) else part for part in str(key).split("."))


def shown_setting(key: str, value: str) -> str | None:
    """What a tracker keeps (params and artifacts) instead of the string ``value`` saved
    under the dotted ``key``, or None to keep it as it is. Whether it is a secret is
    decided by :func:`receval.core.secrets.looks_like_key` with the setting's last name,
    the rule the run spec refuses a config by, so what a run could not have saved
    is never sent: ``"<hidden>"`` when the name says credential (``api_key``, ``token``;
    not ``api_key_env``, ``passages`` or ``author``), else as
    :func:`receval.core.formatting.shown` shows it. A URL is shown by its host and path
    only. Numbers and booleans are never secrets (``max_tokens``)."""
    leaf = key.rsplit(".", 1)[-1]
    if looks_like_key(leaf):  # a key as the setting's name: its value is not shown either
        return "<hidden>"
    if looks_like_key(value, leaf):
        return "<hidden>" if credential_name(leaf) else shown(value, "secret")
    return shown(value, "secret") if network_url(value) else None


def param_value(key: str, value: Any) -> str:
    """A saved setting as a tracker parameter, never a secret (:func:`shown_setting`);
    lists item by item, a mapping in a list key by key."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(param_value(key, v) for v in value) + "]"
    if isinstance(value, dict):
        return cut(format_value(safe_document(value, key)), MAX_PARAM)
    if isinstance(value, str) and (hidden := shown_setting(key, value)) is not None:
        return hidden
    return cut(format_value(value), MAX_PARAM)


def safe_document(value: Any, key: str = "") -> Any:
    """A stored JSON document (``run.json``) with every string through
    :func:`shown_setting` (keys dotted as in params: ``config.retriever.token``), types
    kept; receval's own sha256 digests outside the config are kept as they are."""
    if isinstance(value, dict):
        return {safe_name(k) if isinstance(k, str) else k: safe_document(v, f"{key}.{k}" if key else str(k))
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_document(v, key) for v in value]
    if isinstance(value, str):
        if _DIGEST.fullmatch(value) and not key.startswith("config."):
            return value
        hidden = shown_setting(key, value)
        return value if hidden is None else hidden
    return value


def config_params(config: dict) -> dict[str, str]:
    """The saved config flattened, each name through :func:`safe_name` and each value
    through :func:`param_value`."""
    return {tracker_name(safe_name(key)): param_value(key, value) for key, value in flatten(config).items() if key}


def results_identity(run: Run) -> str:
    """The sha256 of the run's results file: the same stored run, the same identity. The
    door checked it against the manifest (:attr:`Run.digests`); a run read otherwise
    (labels applied afresh) is hashed by the manifest's one digest, its file found as
    the door finds files (a symlink leaving the run refused)."""
    if RESULTS in run.digests:
        return run.digests[RESULTS]
    path = contained(Path(run.run_dir), RESULTS)
    if path is None:
        raise RecevalError(f"{run.run_dir}: no {RESULTS} here; export reads run folders receval wrote")
    return manifest.digest(path)


def run_artifacts(run: Run, identity: str) -> list[Artifact]:
    """``results.parquet`` (copied, checked against ``identity``) and ``run.json`` as read,
    through :func:`safe_document`; a file linked from outside the run is refused
    (:func:`receval.results.door.contained`, the door's check)."""
    found = [Artifact(RESULTS, source=contained(Path(run.run_dir), RESULTS), sha256=identity)]
    if contained(Path(run.run_dir), RUN_JSON) is not None and run.info:
        text = json.dumps(safe_document(run.info), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        found.append(Artifact(RUN_JSON, data=text.encode()))
    return found


def sweep_of(run_dir: Path) -> Path:
    """The sweep a job folder belongs to (its parent when numbered), else the run itself."""
    return run_dir.parent if run_dir.name.isdigit() else run_dir


def _metrics(summary: RunSummary, pairs: dict[str, Any]) -> dict[str, float]:
    out: dict[str, Any] = {}
    for name, interval in summary.metrics.items():
        key = tracker_name(name)
        out.update({key: interval.mean, f"{key}_lo": interval.lo, f"{key}_hi": interval.hi})
    for name, pair in pairs.items():
        key = f"diff_{tracker_name(name)}"
        out.update({key: pair.diff.mean, f"{key}_lo": pair.diff.lo, f"{key}_hi": pair.diff.hi})
    out.update(latency_ms_p50=summary.latency_p50, latency_ms_p95=summary.latency_p95)
    for stage, facts in summary.stages.items():
        out[tracker_name(f"latency_ms.{stage}_p50")] = facts.get("p50")
        out[tracker_name(f"latency_ms.{stage}_p95")] = facts.get("p95")
    for key in ("usd_per_1000", "pairs_per_question", "index_usd"):
        out[key] = summary.costs.get(key)
    out.update(n_questions=summary.n_questions, n_chunks=summary.n_chunks)
    return {k: float(v) for k, v in out.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def tracked(
    runs: Sequence[Run], metrics: list[str] | None = None, baseline: str | None = None,
    names: dict[str, str] | None = None,
) -> list[TrackedSweep]:
    """What to log for ``runs`` (loaded with their configs), grouped by sweep: the report's
    means and intervals (``metrics``, default the report's; the first run's saved
    bootstrap settings) and, with ``baseline`` (a run folder or ``key=value`` naming one
    of the runs), every other run's paired difference on each measure. ``names`` maps
    the parameters to the caller's flags in messages (``{"baseline": "--baseline"}``)."""
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to export")
    flag = (names or {}).get
    base, outside = None, False
    if baseline is not None:
        base, base_run = filters.select_one(runs, baseline, option=flag("baseline", "baseline"))
        if base is None:  # a run folder outside the runs exported: paired against, not exported
            runs.insert(0, base_run)
            base, outside = 0, True
    if metrics is None:
        metrics = [m for m in TRACKER_METRICS if all(m in run.table.column_names for run in runs)]
    measures, metric = measure_names(runs, metrics, "rr", metrics_option=flag("metrics", "metrics"))
    boot = bootstrap_settings(runs, overridden_by=flag("bootstrap", "one export per bootstrap setting"))
    found = summaries(runs, measures, metric, boot, naming_of(runs))
    pairs: dict[str, dict[str, Any]] = {}
    if base is not None:
        others = [run for i, run in enumerate(runs) if i != base]
        for measure in measures:
            for pair in paired(runs[base], others, measure, boot, option=None) if others else []:
                pairs.setdefault(pair.b, {})[measure] = pair
    sweeps: dict[Path, TrackedSweep] = {}
    for run, summary in list(zip(runs, found))[1 if outside else 0:]:
        where = sweep_of(Path(run.run_dir))
        params = config_params(run.config)
        identity = results_identity(run)
        tags = {
            "receval.identity": identity, "receval.run_dir": str(run.run_dir), "receval.label": summary.label,
            "receval.config_hash": str(run.metadata.get("config_hash", "")),
            "receval.dataset_fingerprint": str(run.metadata.get("dataset_fingerprint", "")),
        }
        if base is not None:
            tags["receval.baseline"] = str(runs[base].run_dir)
        artifacts = run_artifacts(run, identity)
        job = TrackedRun(str(run.run_dir), identity, summary.label, params,
                         _metrics(summary, pairs.get(str(run.run_dir), {})), tags, artifacts)
        if where not in sweeps:
            sweeps[where] = TrackedSweep(str(where), "", where.name or str(where), {}, {"receval.sweep_dir": str(where)})
        sweeps[where].runs.append(job)
    for sweep in sweeps.values():
        sweep.identity = hashlib.sha256("\n".join(r.identity for r in sweep.runs).encode()).hexdigest()
        sweep.tags["receval.sweep"] = sweep.identity
        first, *rest = [r.params for r in sweep.runs]
        sweep.params = {k: v for k, v in first.items() if all(p.get(k) == v for p in rest)}
    return list(sweeps.values())
