"""Stored runs exported to MLflow (``receval export RUNS --to mlflow``,
:mod:`receval.analysis.tracker`, :mod:`receval.render.tracker`): the tracker holds the
report's means and bounds, a second export adds nothing, no secret is logged and a
tracking URI found in a stored config is never used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import exit_code, lazy_import, one_error_line, sweep_in_process
from forge import forged

from receval.cli import export, report
from receval.analysis.tracker import config_params, param_value, tracked, tracker_name
from receval.core.errors import RecevalError
from receval.results import load_runs

mlflow = lazy_import("mlflow", reason="needs mlflow-skinny (pip install 'receval[mlflow]')")

METRICS = "hit@1,hit@3,recall@3,rr,ndcg@5"


@pytest.fixture(scope="module")
def sweep(six_runs) -> Path:
    """6 runs: bm25, tfidf x 20, 40, 120 words."""
    return six_runs


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the reading side (search_runs)
    return f"file:{tmp_path / 'mlruns'}"


def search(store: str) -> list:
    mlflow.set_tracking_uri(store)
    experiment = mlflow.get_experiment_by_name("receval")
    return mlflow.search_runs([experiment.experiment_id], output_format="list", max_results=1000)


@pytest.mark.slow
def test_the_tracker_holds_the_reports_means_bounds_and_paired_differences(sweep, store, capsys):
    argv = [sweep, "--to", "mlflow", "--tracking-uri", store, "--metrics", METRICS, "--baseline", "retriever=bm25,max_words=20"]
    assert exit_code(export.main, argv) == 0
    capsys.readouterr()
    assert exit_code(report.main, [sweep, "--format", "json", "--metrics", METRICS,
                                   "--baseline", "retriever=bm25,max_words=20"]) == 0
    reported = json.loads(capsys.readouterr().out)
    found = search(store)
    parents = [r for r in found if "mlflow.parentRunId" not in r.data.tags]
    children = {r.data.tags["receval.run_dir"]: r for r in found if "mlflow.parentRunId" in r.data.tags}
    assert len(parents) == 1 and len(children) == 6
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children.values())
    for run_ in reported["runs"]:
        logged = children[run_["run_dir"]]
        assert logged.data.tags["mlflow.runName"] == run_["label"]
        for name, interval in run_["metrics"].items():
            key = tracker_name(name)
            assert abs(logged.data.metrics[key] - interval["mean"]) <= 1e-12
            assert abs(logged.data.metrics[f"{key}_lo"] - interval["ci"][0]) <= 1e-12
            assert abs(logged.data.metrics[f"{key}_hi"] - interval["ci"][1]) <= 1e-12
        assert logged.data.metrics["latency_ms_p50"] == pytest.approx(run_["latency_ms"]["p50"], abs=1e-12)
        assert logged.data.params["chunking.max_words"] == str(run_["params"]["max_words"])
    for pair in reported["pairs"]:  # the report pairs on rr
        logged = children[pair["run_dir"]].data.metrics
        assert abs(logged["diff_rr"] - pair["diff"]) <= 1e-12
        assert [logged["diff_rr_lo"], logged["diff_rr_hi"]] == pytest.approx(pair["ci"], abs=1e-12)
    baseline = children[reported["baseline"]].data.metrics
    assert "diff_rr" not in baseline  # each other run is paired on every measure
    assert all({"diff_hit_at_3", "diff_hit_at_3_lo", "diff_ndcg_at_5_hi"} <= set(r.data.metrics)
               for d, r in children.items() if d != reported["baseline"])
    # the sweep's params are what every job shares
    assert parents[0].data.params["dataset.name"] == children[reported["baseline"]].data.params["dataset.name"]
    assert "chunking.max_words" not in parents[0].data.params
    # artifacts: the stored files, as they are
    client = mlflow.MlflowClient(store)
    some = children[reported["runs"][1]["run_dir"]]
    names = {a.path for a in client.list_artifacts(some.info.run_id)}
    assert names == {"results.parquet", "run.json"}
    local = client.download_artifacts(some.info.run_id, "run.json", str(Path(store[5:]).parent / "dl"))
    assert Path(local).read_bytes() == (Path(reported["runs"][1]["run_dir"]) / "run.json").read_bytes()


@pytest.mark.slow
def test_a_second_export_adds_nothing(sweep, store, capsys):
    argv = [sweep, "--to", "mlflow", "--tracking-uri", store]
    assert exit_code(export.main, argv) == 0
    assert "7 MLflow runs created, 0 already there" in capsys.readouterr().err
    first = sorted(r.info.run_id for r in search(store))
    assert exit_code(export.main, argv) == 0
    assert "0 MLflow runs created, 6 already there" in capsys.readouterr().err
    assert sorted(r.info.run_id for r in search(store)) == first


@pytest.mark.slow
def test_a_half_written_run_is_written_again(sweep, store, capsys):
    argv = [sweep, "--to", "mlflow", "--tracking-uri", store]
    assert exit_code(export.main, argv) == 0
    client = mlflow.MlflowClient(store)
    victim = next(r for r in search(store) if "mlflow.parentRunId" in r.data.tags)
    client.delete_tag(victim.info.run_id, "receval.exported")  # as if the export stopped before the end
    capsys.readouterr()
    assert exit_code(export.main, argv) == 0
    assert "1 MLflow runs created, 5 already there" in capsys.readouterr().err
    assert len(search(store)) == 7


@pytest.mark.slow
def test_params_hold_no_secret_and_a_stored_tracking_uri_is_never_used(tmp_path, store, capsys, monkeypatch):
    (run_dir,) = [sweep_in_process(tmp_path / "s", ["retriever=bm25"]) / "0"]
    saved = json.loads((run_dir / "run.json").read_text())
    saved["config"]["tracking_uri"] = "http://127.0.0.1:9/api"  # a stored run is data
    saved["config"]["retriever"]["api_key_env"] = "MY_KEY"
    saved["config"]["retriever"]["endpoint"] = "https://user:sk-abcdef0123456789abcdef@host.example/v1?api_key=x"
    saved["config"]["retriever"]["token"] = "plain-looking"
    (run_dir / "run.json").write_text(json.dumps(saved))
    forged(run_dir)
    monkeypatch.setenv("MY_KEY", "sk-the-real-key-0123456789")
    assert exit_code(export.main, [run_dir, "--to", "mlflow", "--tracking-uri", store]) == 0
    (child,) = [r for r in search(store) if "mlflow.parentRunId" in r.data.tags]
    params = child.data.params
    assert params["retriever.api_key_env"] == "MY_KEY"
    assert params["retriever.endpoint"] == "https://host.example/v1 (query not shown)"
    assert params["retriever.token"] == "<hidden>"
    assert params["tracking_uri"] == "http://127.0.0.1:9/api"  # logged as a value, never used
    files = [p for p in Path(store[5:]).rglob("*") if p.is_file()]
    assert not any("sk-the-real-key" in p.read_text(errors="ignore") for p in files)  # the key was never read
    assert any(p.name == "run.json" for p in files)  # the artifact too holds no key
    assert not any("sk-abcdef" in p.read_text(errors="ignore") for p in files)


def test_param_values_are_the_config_as_typed():
    assert param_value("chunking.max_words", 120) == "120"
    assert param_value("rerank", None) == "null"
    assert param_value("metrics.ks", (1, 3, 5)) == "[1, 3, 5]"
    assert param_value("retriever.url", "sk-0123456789abcdefghijklmn") == "<hidden: looks like a key>"
    assert config_params({"retriever": {"kind": "bm25", "k1": 0.9}}) == {"retriever.kind": "bm25", "retriever.k1": "0.9"}
    assert tracker_name("hit@3") == "hit_at_3" and tracker_name("latency_ms.bm25") == "latency_ms.bm25"


@pytest.mark.slow
def test_the_plan_groups_jobs_by_sweep_and_names_the_identity(sweep):
    (plan,) = tracked(load_runs([sweep]), ["rr"])
    assert plan.sweep_dir == str(sweep) and len(plan.runs) == 6
    assert len({r.identity for r in plan.runs}) == 6
    for r in plan.runs:
        parquet, info = r.artifacts
        assert (parquet.name, parquet.source, parquet.sha256) == ("results.parquet", Path(r.run_dir) / "results.parquet",
                                                                  r.identity)
        assert info.name == "run.json" and info.data == (Path(r.run_dir) / "run.json").read_bytes()  # nothing to hide
    again = tracked(load_runs([sweep]), ["rr"])[0]
    assert again.identity == plan.identity


@pytest.mark.slow
def test_user_errors_are_one_line(sweep, store, capsys, monkeypatch):
    assert exit_code(export.main, [sweep, "--to", "mlflow"]) == 2
    assert "--to mlflow needs --tracking-uri URI" in one_error_line(capsys)
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", store, "--baseline", "retriever=nope"]) == 2
    assert "--baseline retriever=nope: matches none of the 6 runs" in one_error_line(capsys)
    assert exit_code(export.main, [sweep]) == 2
    assert "give --trec FILE (a TREC run) or --to mlflow" in one_error_line(capsys)
    assert exit_code(export.main, [sweep, "--to", "mlflow", "--tracking-uri", f"file:{sweep / '0' / 'mlruns'}"]) == 2
    assert "which this command reads; put the store elsewhere" in one_error_line(capsys)
    assert not (sweep / "0" / "mlruns").exists()
    import builtins

    real_import = builtins.__import__

    def no_mlflow(name, *args, **kwargs):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    with pytest.raises(RecevalError, match=r"needs mlflow-skinny: pip install 'receval\[mlflow\]'"):
        from receval.render.tracker import mlflow_modules

        mlflow_modules()
