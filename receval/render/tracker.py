"""Stored runs logged to MLflow (``receval export RUNS --to mlflow``): the
plan of :mod:`receval.analysis.tracker` sent through ``MlflowClient``, to the tracking
URI the user gave and no other (a URI in a stored config is never read).

One parent run per sweep (its shared params), one child per job (params, metrics,
tags, then ``results.parquet`` and ``run.json`` as artifacts, written from what was
read into a temporary folder first); a run is marked ``receval.exported = true`` last,
after which it is complete, and a parent only after all its children. Before creating
anything, each sweep and job is looked up by its identity tag:

- a complete one is kept; a second export adds nothing, except measures it did not
  log before (a new ``--metrics``, or ``--baseline`` where there was none): those are
  added to the existing run. A ``--baseline`` other than the one a run was exported
  with is refused before anything is written (its ``diff_`` metrics would mix two
  baselines).
- a half-written one (an export killed midway) is deleted and written again.

An export that stops (an error, a full disk, Ctrl-C) deletes the runs of the sweep it
was writing, parent included: no stray parent is left. A full disk or another OS error
is one message. Messages show the tracking URI without its user, password or query
(:func:`uri_shown`, :func:`scrubbed`). mlflow-skinny is an optional extra (``pip install
'receval[mlflow]'``), imported here only. MLflow 3 keeps its file store
(``file:./mlruns``) behind ``MLFLOW_ALLOW_FILE_STORE``; a file store the user names is
allowed for this export only.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from receval.analysis.tracker import Artifact, TrackedRun, TrackedSweep
from receval.core.errors import RecevalError
from receval.core.formatting import shown
from receval.core.secrets import clip, cut, network_url, split_url

EXTRA = "mlflow"
DONE_TAG = "receval.exported"
BASELINE_TAG = "receval.baseline"
_BATCH_PARAMS, _BATCH_METRICS = 100, 1000  # MLflow's log_batch limits


def mlflow_modules():
    """(MlflowClient, MlflowException, entities), or a RecevalError naming the extra."""
    try:
        from mlflow import entities
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise RecevalError(
            f"--to mlflow needs mlflow-skinny: pip install 'receval[{EXTRA}]' (or pip install mlflow-skinny)"
        ) from None
    return MlflowClient, MlflowException, entities


def is_file_store(uri: str) -> bool:
    parts = split_url(uri)
    return parts is not None and parts.scheme in ("", "file")


@contextlib.contextmanager
def _file_store_allowed(uri: str) -> Iterator[None]:
    key = "MLFLOW_ALLOW_FILE_STORE"
    before = os.environ.get(key)
    if is_file_store(uri):
        os.environ[key] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def uri_shown(uri: str) -> str:
    """The tracking URI as a message shows it: a network URI without user, password,
    query or fragment (:func:`receval.core.formatting.shown`); a file store as given."""
    return shown(uri, "secret") if network_url(uri) else cut(uri, 200)


def scrubbed(text: str, uri: str, limit: int = 300) -> str:
    """``text`` (a tracker's error) with every credential of ``uri`` taken out (the URI
    itself, its ``user:password@``, its password, its query values), then cut."""
    parts = split_url(uri)
    found = [(uri.strip(), uri_shown(uri))]
    if parts is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        if userinfo:
            found += [(userinfo + "@", ""), (urllib.parse.unquote(userinfo) + "@", "")]
        if parts.password:
            found += [(parts.password, "***"), (urllib.parse.unquote(parts.password), "***")]
        for text_part in (parts.query, parts.fragment):
            for _, value in urllib.parse.parse_qsl(text_part, keep_blank_values=True):
                if len(value) >= 3:
                    found += [(value, "***"), (urllib.parse.quote(value, safe=""), "***")]
    for secret, instead in sorted(found, key=lambda pair: -len(pair[0])):
        if secret:
            text = text.replace(secret, instead)
    return clip(text, limit)


@dataclass
class Exported:
    """What an export did: runs created, runs already there, and of those the ones given
    measures they lacked (tracker run ids)."""

    experiment_id: str
    created: list[str] = field(default_factory=list)  # parents and children
    kept: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)  # kept runs given new metrics

    def line(self) -> str:
        added = f", {len(self.extended)} of them given new measures" if self.extended else ""
        return (f"{len(self.created)} MLflow runs created, {len(self.kept)} already there{added} "
                f"(experiment {self.experiment_id})")


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def log(sweeps: list[TrackedSweep], tracking_uri: str, experiment: str) -> Exported:
    """Log ``sweeps`` to the MLflow store at ``tracking_uri`` under ``experiment``
    (created if missing); a tracker error or an OS error (a full disk) is one
    RecevalError, its text without the URI's credentials."""
    MlflowClient, MlflowException, entities = mlflow_modules()
    where = f"--to mlflow ({uri_shown(tracking_uri)})"
    with _file_store_allowed(tracking_uri), tempfile.TemporaryDirectory(prefix="receval-export-") as work:
        try:
            return _log(MlflowClient(tracking_uri=tracking_uri), entities, sweeps, experiment, Path(work))
        except MlflowException as error:
            raise RecevalError(f"{where}: {scrubbed(str(error), tracking_uri)}") from None
        except OSError as error:
            if error.errno == errno.ENOSPC:
                raise RecevalError(
                    f"{where}: no space left on the device{_on(error, tracking_uri)}; free some space and export "
                    "again (the runs this export had begun were removed)"
                ) from None
            raise RecevalError(
                f"{where}: {error.strerror or scrubbed(str(error), tracking_uri)}{_on(error, tracking_uri)}; "
                "the runs this export had begun were removed"
            ) from None


def _on(error: OSError, uri: str) -> str:
    return f" writing {scrubbed(str(error.filename), uri, 200)}" if error.filename else ""


@dataclass
class _Found:
    """What the tracker already holds of one sweep."""

    parent: object | None  # the complete parent run, if any
    stale: list  # parents an export killed midway left incomplete
    children: dict[str, list]  # job identity -> its runs under the complete parent


def _log(client, entities, sweeps: list[TrackedSweep], experiment: str, work: Path) -> Exported:
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
    done = Exported(experiment_id)

    def lookup(filter_string: str) -> list:
        return client.search_runs([experiment_id], filter_string=filter_string, max_results=1000)

    plans = []
    for sweep in sweeps:  # every lookup and refusal before anything is written
        parents = lookup(f"tags.`receval.sweep` = {_quoted(sweep.identity)}")
        complete = [r for r in parents if r.data.tags.get(DONE_TAG) == "true"]
        stale = [r for r in parents if r.data.tags.get(DONE_TAG) != "true"]
        plan = _Found(complete[0] if complete else None, stale, {})
        if plan.parent is not None:
            for run in sweep.runs:
                plan.children[run.identity] = lookup(
                    f"tags.`receval.identity` = {_quoted(run.identity)} and "
                    f"tags.`mlflow.parentRunId` = {_quoted(plan.parent.info.run_id)}"
                )
                _check_baseline(run, [r for r in plan.children[run.identity] if r.data.tags.get(DONE_TAG) == "true"])
        plans.append((sweep, plan))
    for sweep, plan in plans:
        for stale in plan.stale:
            for child in lookup(f"tags.`mlflow.parentRunId` = {_quoted(stale.info.run_id)}"):
                client.delete_run(child.info.run_id)
            client.delete_run(stale.info.run_id)
        _write_sweep(client, entities, experiment_id, sweep, plan, done, work)
    return done


def _check_baseline(run: TrackedRun, complete: list) -> None:
    if not complete:
        return
    before, now = complete[0].data.tags.get(BASELINE_TAG), run.tags.get(BASELINE_TAG)
    if before and now and before != now:
        raise RecevalError(
            f"--baseline: {run.run_dir} was exported with baseline {before}, not {now}; its diff_ measures "
            f"would mix two baselines, so this export will not add them: give --baseline {before}, or export "
            "to another --experiment"
        )


def _write_sweep(client, entities, experiment_id, sweep: TrackedSweep, plan: _Found, done: Exported, work: Path):
    """One sweep: the parent (when new) first but marked complete last; on any stop,
    every run this call created for the sweep is deleted, parent included."""
    made: list[str] = []
    try:
        if plan.parent is None:
            parent_id = _start(client, experiment_id, sweep.name, sweep.tags)
            made.append(parent_id)
            _fill(client, entities, parent_id, sweep.params, {}, [], work)
        else:
            parent_id = plan.parent.info.run_id
        for run in sweep.runs:
            same = plan.children.get(run.identity, [])
            complete = [r for r in same if r.data.tags.get(DONE_TAG) == "true"]
            if complete:
                done.kept.append(complete[0].info.run_id)
                if _extend(client, entities, complete[0], run):
                    done.extended.append(complete[0].info.run_id)
                continue
            for partial in same:  # an export killed midway: written again
                client.delete_run(partial.info.run_id)
            child = _start(client, experiment_id, run.name, {**run.tags, "mlflow.parentRunId": parent_id})
            made.append(child)
            _fill(client, entities, child, run.params, run.metrics, run.artifacts, work)
            _finish(client, child)
        if plan.parent is None:
            _finish(client, parent_id)
    except BaseException:
        for run_id in reversed(made):
            with contextlib.suppress(Exception):
                client.delete_run(run_id)
        raise
    done.created += made


def _extend(client, entities, existing, run: TrackedRun) -> bool:
    """Add to a complete run the measures it lacks (a new ``--metrics`` or ``--baseline``)."""
    new = {k: v for k, v in run.metrics.items() if k not in existing.data.metrics}
    if not new:
        return False
    stamp = int(time.time() * 1000)
    values = [entities.Metric(k, v, stamp, 0) for k, v in new.items()]
    for start in range(0, len(values), _BATCH_METRICS):
        client.log_batch(existing.info.run_id, metrics=values[start:start + _BATCH_METRICS])
    if run.tags.get(BASELINE_TAG) and not existing.data.tags.get(BASELINE_TAG):
        client.set_tag(existing.info.run_id, BASELINE_TAG, run.tags[BASELINE_TAG])
    return True


def _start(client, experiment_id, name, tags) -> str:
    return client.create_run(experiment_id, run_name=name, tags={k: v for k, v in tags.items() if v != ""}).info.run_id


def _fill(client, entities, run_id, params, metrics, artifacts: list[Artifact], work: Path) -> None:
    """Params, metrics and artifacts of one tracker run (not yet marked complete)."""
    stamp = int(time.time() * 1000)
    items = [entities.Param(k, v) for k, v in params.items()]
    for start in range(0, len(items), _BATCH_PARAMS):
        client.log_batch(run_id, params=items[start:start + _BATCH_PARAMS])
    values = [entities.Metric(k, v, stamp, 0) for k, v in metrics.items()]
    for start in range(0, len(values), _BATCH_METRICS):
        client.log_batch(run_id, metrics=values[start:start + _BATCH_METRICS])
    for artifact in artifacts:
        folder = work / run_id
        folder.mkdir(exist_ok=True)
        client.log_artifact(run_id, str(_written(artifact, folder)))


def _written(artifact: Artifact, folder: Path) -> Path:
    """The artifact as a file in ``folder``: its data, or the run's file copied and checked
    against the identity it was exported under."""
    path = folder / artifact.name
    if artifact.data is not None:
        path.write_bytes(artifact.data)
        return path
    digest = hashlib.sha256()
    with open(artifact.source, "rb") as source, open(path, "wb") as copy:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
            copy.write(block)
    if digest.hexdigest() != artifact.sha256:
        raise RecevalError(f"{artifact.source}: changed while it was being exported; export again")
    return path


def _finish(client, run_id: str) -> None:
    client.set_tag(run_id, DONE_TAG, "true")
    client.set_terminated(run_id, "FINISHED")
