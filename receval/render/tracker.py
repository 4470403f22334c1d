"""Stored runs logged to MLflow (``receval export RUNS --to mlflow``): the
plan of :mod:`receval.analysis.tracker` sent through ``MlflowClient``, to the tracking
URI the user gave and no other (a URI in a stored config is never read).

One parent run per sweep (its shared params), one child per job (params, metrics,
tags, then ``results.parquet`` and ``run.json`` as artifacts); a child is marked
``receval.exported = true`` last, after which it is complete. Before creating anything,
each sweep and job is looked up by its identity tag: a complete one is left as it is
(a second export adds nothing), a half-written one (an export stopped midway) is
deleted and written again. mlflow-skinny is an optional extra (``pip install
'receval[mlflow]'``), imported here only. MLflow 3 keeps its file store
(``file:./mlruns``) behind ``MLFLOW_ALLOW_FILE_STORE``; a file store the user names is
allowed for this export only.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from receval.analysis.tracker import TrackedSweep
from receval.core.errors import RecevalError
from receval.core.secrets import cut, split_url

EXTRA = "mlflow"
DONE_TAG = "receval.exported"
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


@dataclass
class Exported:
    """What an export did: runs created and runs already there (tracker run ids)."""

    experiment_id: str
    created: list[str] = field(default_factory=list)  # parents and children
    kept: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{len(self.created)} MLflow runs created, {len(self.kept)} already there "
                f"(experiment {self.experiment_id})")


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def log(sweeps: list[TrackedSweep], tracking_uri: str, experiment: str) -> Exported:
    """Log ``sweeps`` to the MLflow store at ``tracking_uri`` under ``experiment``
    (created if missing); a tracker error is a RecevalError with its message."""
    MlflowClient, MlflowException, entities = mlflow_modules()
    with _file_store_allowed(tracking_uri):
        try:
            return _log(MlflowClient(tracking_uri=tracking_uri), entities, sweeps, experiment)
        except MlflowException as error:
            raise RecevalError(f"--to mlflow ({cut(tracking_uri)}): {cut(str(error), 300)}") from None


def _log(client, entities, sweeps: list[TrackedSweep], experiment: str) -> Exported:
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
    done = Exported(experiment_id)

    def lookup(filter_string: str) -> list:
        return client.search_runs([experiment_id], filter_string=filter_string, max_results=1000)

    for sweep in sweeps:
        parents = [r for r in lookup(f"tags.`receval.sweep` = {_quoted(sweep.identity)}")
                   if r.data.tags.get(DONE_TAG) == "true"]
        if parents:
            parent_id = parents[0].info.run_id
        else:
            parent_id = _create(client, entities, experiment_id, sweep.name, sweep.params, {}, sweep.tags, [])
            done.created.append(parent_id)
        for run in sweep.runs:
            same = lookup(f"tags.`receval.identity` = {_quoted(run.identity)} and "
                          f"tags.`mlflow.parentRunId` = {_quoted(parent_id)}")
            complete = [r for r in same if r.data.tags.get(DONE_TAG) == "true"]
            if complete:
                done.kept.append(complete[0].info.run_id)
                continue
            for partial in same:  # an export stopped midway: written again
                client.delete_run(partial.info.run_id)
            tags = {**run.tags, "mlflow.parentRunId": parent_id}
            done.created.append(
                _create(client, entities, experiment_id, run.name, run.params, run.metrics, tags, run.artifacts)
            )
    return done


def _create(client, entities, experiment_id, name, params, metrics, tags, artifacts) -> str:
    """One tracker run, complete: params, metrics, tags, artifacts, then the done tag."""
    created = client.create_run(experiment_id, run_name=name, tags={k: v for k, v in tags.items() if v != ""})
    run_id = created.info.run_id
    stamp = int(time.time() * 1000)
    items = [entities.Param(k, v) for k, v in params.items()]
    for start in range(0, len(items), _BATCH_PARAMS):
        client.log_batch(run_id, params=items[start:start + _BATCH_PARAMS])
    values = [entities.Metric(k, v, stamp, 0) for k, v in metrics.items()]
    for start in range(0, len(values), _BATCH_METRICS):
        client.log_batch(run_id, metrics=values[start:start + _BATCH_METRICS])
    for path in artifacts:
        client.log_artifact(run_id, str(path))
    client.set_tag(run_id, DONE_TAG, "true")
    client.set_terminated(run_id, "FINISHED")
    return run_id
