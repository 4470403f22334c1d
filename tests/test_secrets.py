"""Credentials read from the environment never reach any output of a run, a report
or an error message: every file written and every line printed is searched."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_embeddings import KEY, api  # noqa: F401  (the fake embeddings server fixture)

ENV = "RECEVAL_TEST_API_KEY"


def outputs(*folders):
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                yield path, path.read_bytes()


def dense_over_http(api, *extra):  # noqa: F811
    return [
        "retriever=dense", "retriever.backend=http", f"retriever.base_url={api.base_url}",
        "retriever.model=fake", f"retriever.api_key_env={ENV}", *extra,
    ]


@pytest.mark.slow
def test_a_run_report_and_export_never_write_the_key(api, tmp_path):  # noqa: F811
    env = {ENV: KEY, "RECEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = run_cli(*dense_over_http(api, "hydra.run.dir=out"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert api.requests and all(r["auth"] == f"Bearer {KEY}" for r in api.requests)  # the key was used
    report = run_cli("out", "--format", "json", "--out", "report.json", cwd=tmp_path, env=env, command="report")
    export = run_cli("out", "--trec", "run.trec", cwd=tmp_path, env=env, command="export")
    assert report.returncode == 0 and export.returncode == 0
    printed = [done.stdout, done.stderr, report.stdout, report.stderr, export.stdout, export.stderr]
    assert not any(KEY in text for text in printed)
    files = list(outputs(tmp_path))
    assert any(p.name == "results.parquet" for p, _ in files) and any(p.parent.name == ".hydra" for p, _ in files)
    leaked = [str(p) for p, data in files if KEY.encode() in data]
    assert leaked == []
    assert any(ENV.encode() in data for p, data in files if p.name == "config.yaml")  # only the variable's name


@pytest.mark.slow
def test_an_error_that_echoes_the_key_does_not_print_it(api, tmp_path):  # noqa: F811
    api.mode = "echo-key"
    done = run_cli(*dense_over_http(api, "hydra.run.dir=out"), cwd=tmp_path, env={ENV: KEY})
    assert done.returncode == 2 and "receval: error:" in done.stderr
    assert KEY not in done.stderr and KEY not in done.stdout
    assert [str(p) for p, data in outputs(tmp_path) if KEY.encode() in data] == []


@pytest.mark.slow
def test_a_key_given_as_the_variable_name_is_refused_without_echoing_it(tmp_path):
    done = run_cli("retriever=dense", "retriever.backend=http", "retriever.base_url=http://127.0.0.1:9/v1",
                   f"retriever.api_key_env={KEY}", "hydra.run.dir=out", cwd=tmp_path)
    assert done.returncode == 2 and KEY not in done.stderr + done.stdout
