"""``export --to mlflow`` against hostile runs and failures (issue 36, step 6): no secret
in an artifact, no file from outside a run, a re-export that adds measures or says it
will not, no stray parent after a stop, credentials scrubbed from messages, a full disk
as one message; default measures as the report's plus nDCG@10 and MAP."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import exit_code, lazy_import, one_error_line, sweep_in_process
from forge import forged

from receval.cli import export
from receval.render import tracker as render_tracker
from receval.render.tracker import scrubbed, uri_shown

mlflow = lazy_import("mlflow", reason="needs mlflow-skinny (pip install 'receval[mlflow]')")

KEY = "sk-abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """Two jobs (bm25, tfidf), made once; each test copies them."""
    return sweep_in_process(tmp_path_factory.mktemp("sweep") / "s", ["retriever=bm25", "retriever=tfidf"])


@pytest.fixture
def sweep(made, tmp_path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "s"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the reading side (search_runs)
    return f"file:{tmp_path / 'mlruns'}"


def runs_in(store: str) -> list:
    """The active runs of the experiment ``receval`` (none when it does not exist)."""
    client = mlflow.MlflowClient(store)
    experiment = client.get_experiment_by_name("receval")
    return [] if experiment is None else client.search_runs([experiment.experiment_id], max_results=1000)


def children_of(store: str) -> dict[str, object]:
    return {Path(r.data.tags["receval.run_dir"]).name: r for r in runs_in(store) if "mlflow.parentRunId" in r.data.tags}


@pytest.mark.slow
def test_a_key_in_run_json_reaches_no_artifact(sweep, store, tmp_path):
    saved = json.loads((sweep / "0" / "run.json").read_text())
    saved["config"]["retriever"]["body"] = {"token": KEY, "nested": [{"note": KEY}], "top_k": 5}
    saved["config"]["retriever"]["endpoint"] = f"https://user:{KEY}@host.example/v1?api_key=x"
    saved["config"]["chunking"]["max_tokens"] = 256  # named like a credential, but a number
    (sweep / "0" / "run.json").write_text(json.dumps(saved))
    forged(sweep / "0")  # sealed again, as if the run had saved it so
    assert exit_code(export.main, [sweep / "0", "--to", "mlflow", "--tracking-uri", store]) == 0
    files = [p for p in (tmp_path / "mlruns").rglob("*") if p.is_file()]
    assert not any(KEY[3:] in p.read_text(errors="ignore") for p in files)
    (child,) = children_of(store).values()
    where = mlflow.MlflowClient(store).download_artifacts(child.info.run_id, "run.json", str(tmp_path))
    config = json.loads(Path(where).read_text())["config"]
    assert config["retriever"]["body"] == {"token": "<hidden>", "nested": [{"note": "<hidden: looks like a key>"}],
                                           "top_k": 5}
    assert config["retriever"]["endpoint"] == "https://host.example/v1 (query not shown)"
    assert config["chunking"]["max_tokens"] == 256 and child.data.params["chunking.max_tokens"] == "256"
    assert child.data.params["retriever.body.nested"] == "[{'note': '<hidden: looks like a key>'}]"
    assert child.data.params["retriever.body.token"] == "<hidden>"
    assert config["retriever"]["kind"] == saved["config"]["retriever"]["kind"]  # the rest as stored


@pytest.mark.slow
def test_a_run_file_linked_from_outside_the_run_is_never_uploaded(sweep, store, tmp_path, capsys):
    credentials = tmp_path / "credentials.json"
    credentials.write_text(json.dumps({"client_secret": KEY, "config": {}}))
    (sweep / "1" / "run.json").unlink()
    os.symlink(credentials, sweep / "1" / "run.json")
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 2
    line = one_error_line(capsys)
    assert f"{sweep / '1' / 'run.json'}: a symlink to {credentials}, outside the run folder" in line
    assert KEY not in line and runs_in(store) == []
    inside = sweep / "1" / "facts.json"  # a link within the run folder is the run's own file
    shutil.copy(sweep / "0" / "run.json", inside)
    (sweep / "1" / "run.json").unlink()
    os.symlink(inside, sweep / "1" / "run.json")
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 0


@pytest.mark.slow
def test_a_re_export_adds_new_measures_and_refuses_another_baseline(sweep, store, capsys):
    argv = [sweep, "--to", "mlflow", "--tracking-uri", store, "--metrics", "rr"]
    assert exit_code(export.main, argv) == 0
    first = children_of(store)
    assert "hit_at_3" not in first["1"].data.metrics and "diff_rr" not in first["1"].data.metrics
    capsys.readouterr()
    assert exit_code(export.main, [*argv[:-1], "rr,hit@3", "--baseline", "retriever=bm25"]) == 0
    assert "0 MLflow runs created, 2 already there, 2 of them given new measures" in capsys.readouterr().err
    again = children_of(store)
    assert {k: r.info.run_id for k, r in again.items()} == {k: r.info.run_id for k, r in first.items()}
    assert again["1"].data.metrics["rr"] == first["1"].data.metrics["rr"]
    assert {"hit_at_3", "hit_at_3_lo", "diff_rr", "diff_hit_at_3_hi"} <= set(again["1"].data.metrics)
    assert again["1"].data.tags["receval.baseline"] == str(sweep / "0")
    assert exit_code(export.main, [*argv, "--baseline", "retriever=tfidf"]) == 2
    assert f"was exported with baseline {sweep / '0'}, not {sweep / '1'}; its diff_ measures would mix two " \
        f"baselines, so this export will not add them: give --baseline {sweep / '0'}" in one_error_line(capsys)
    assert children_of(store)["1"].data.metrics == again["1"].data.metrics  # nothing written


@pytest.mark.slow
def test_a_stopped_export_leaves_no_stray_parent(sweep, store, capsys, monkeypatch):
    real = render_tracker._fill
    calls = []

    def stopping(client, entities, run_id, params, metrics, *rest):
        calls.append(run_id)
        if len(calls) == 3:  # the parent, the first job, then Ctrl-C in the second
            raise KeyboardInterrupt
        return real(client, entities, run_id, params, metrics, *rest)

    monkeypatch.setattr(render_tracker, "_fill", stopping)
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 130
    assert capsys.readouterr().err == ("receval: export interrupted; the MLflow runs of the sweep it was writing "
                                       "were removed (export again to finish)\n")
    assert runs_in(store) == []  # parent and the finished first job removed too
    monkeypatch.setattr(render_tracker, "_fill", real)
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 0
    assert "3 MLflow runs created, 0 already there" in capsys.readouterr().err


@pytest.mark.slow
def test_a_parent_left_by_a_killed_export_is_replaced(sweep, store, capsys):
    argv = [sweep, "--to", "mlflow", "--tracking-uri", store]
    assert exit_code(export.main, argv) == 0
    (parent,) = [r for r in runs_in(store) if "mlflow.parentRunId" not in r.data.tags]
    mlflow.MlflowClient(store).delete_tag(parent.info.run_id, "receval.exported")  # killed before the end
    capsys.readouterr()
    assert exit_code(export.main, argv) == 0
    assert "3 MLflow runs created, 0 already there" in capsys.readouterr().err
    assert len(runs_in(store)) == 3 and parent.info.run_id not in {r.info.run_id for r in runs_in(store)}


@pytest.mark.slow
def test_a_full_disk_is_one_message_and_leaves_nothing(sweep, store, capsys, monkeypatch):
    def full(self, run_id, local_path, artifact_path=None):
        raise OSError(errno.ENOSPC, "No space left on device", local_path)

    monkeypatch.setattr(mlflow.MlflowClient, "log_artifact", full)
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"receval: error: --to mlflow ({store}): no space left on the device writing ")
    assert line.endswith("results.parquet; free some space and export again (the runs this export had begun "
                         "were removed)")
    assert runs_in(store) == []


def test_tracking_uri_credentials_are_scrubbed_from_messages():
    uri = "http://alice:s3cr3t-pw@mlflow.example:5000/base?token=tok-123456&x=1"
    assert uri_shown(uri) == "http://mlflow.example:5000/base (query not shown)"
    error = (f"API request to {uri}/api/2.0/mlflow/runs failed; "
             "retried http://alice:s3cr3t-pw@mlflow.example:5000/api with token=tok-123456")
    out = scrubbed(error, uri)
    assert out == ("API request to http://mlflow.example:5000/base (query not shown)/api/2.0/mlflow/runs failed; "
                   "retried http://mlflow.example:5000/api with token=***")
    assert uri_shown("file:./mlruns") == "file:./mlruns"


@pytest.mark.slow  # importing mlflow starts a subprocess
def test_a_tracker_error_names_the_uri_without_its_credentials(monkeypatch, capsys, tmp_path):
    from mlflow.exceptions import MlflowException

    uri = "https://bob:hunter2-pass@tracker.example/?access_token=abcdef123"

    class Refusing:
        def __init__(self, tracking_uri):
            self.uri = tracking_uri

        def get_experiment_by_name(self, name):
            raise MlflowException(f"API request to endpoint {self.uri}api/2.0/mlflow/experiments failed: 401")

    real = render_tracker.mlflow_modules()
    monkeypatch.setattr(render_tracker, "mlflow_modules", lambda: (Refusing, *real[1:]))
    with pytest.raises(Exception) as caught:
        render_tracker.log([], uri, "receval")
    message = str(caught.value)
    assert "hunter2" not in message and "abcdef123" not in message and "bob" not in message
    assert message.startswith("--to mlflow (https://tracker.example/ (query not shown)): API request to endpoint "
                              "https://tracker.example/ (query not shown)api/2.0/mlflow/experiments failed: 401")


@pytest.mark.slow
def test_default_measures_are_the_reports_and_ndcg_at_10_and_map(sweep, store):
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store]) == 0
    logged = children_of(store)["0"].data.metrics
    for name in ("hit_at_1", "hit_at_3", "recall_at_3", "rr", "ndcg_at_5", "ndcg_at_10", "ap"):
        assert {name, f"{name}_lo", f"{name}_hi"} <= set(logged)
        assert logged[f"{name}_lo"] <= logged[name] <= logged[f"{name}_hi"]
    saved = json.loads((sweep / "0" / "run.json").read_text())["means"]
    assert logged["ndcg_at_10"] == pytest.approx(saved["ndcg@10"], abs=1e-12)
    assert logged["ap"] == pytest.approx(saved["ap"], abs=1e-12)
