"""Trust: a stored run is data, keys never reach disk, outputs never destroy inputs.

Issue 10 items 1, 2 and 4: ``reproduce`` of a tampered run sends no request (a
loopback server counts them), evaluates no interpolation and imports nothing
without ``--allow-remote`` / ``--allow-code``; a key pasted on the command line is
refused before Hydra writes a folder; every output flag refuses a path inside a
stored run or dataset, a directory, and an existing file without ``--force``.
"""

from __future__ import annotations

import json
import os
import shutil
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, exit_code, loopback, run_cli, run_of
from forge import forged

from receval.cli import compare, export, report
from receval.cli import reproduce
from receval.run.argv import argv_problems
from receval.core import trust
from receval.core.errors import RecevalError
from receval.core.outputs import check_output

SECRET = "s3cr3t-Zq8v3LkR0-value"
ENV = "RECEVAL_TRUST_TEST_SECRET"
KEY = "sk-test-Zq8v3LkR0secret"


# ----------------------------------------------------------------- helpers


class Recorder(BaseHTTPRequestHandler):
    """Counts every request and refuses it (401: not retried)."""

    def log_message(self, *args):
        pass

    def _any(self):
        self.server.requests.append((self.command, self.path, self.headers.get("Authorization")))
        payload = b'{"error": "no"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _any


@pytest.fixture
def server():
    with loopback(Recorder) as httpd:
        httpd.requests = []
        httpd.url = f"{httpd.root}/v1"
        yield httpd


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    return run_of(tmp_path_factory, "retriever=bm25")


@pytest.fixture
def run(base_run, tmp_path) -> Path:
    """A copy of a bm25 run with its config saved as Hydra saves it (cache_dir unresolved)."""
    target = tmp_path / "run"
    shutil.copytree(base_run, target)
    config = json.loads((target / "run.json").read_text())["config"]
    config["cache_dir"] = "${oc.env:RECEVAL_CACHE_DIR,.cache/receval}"
    (target / ".hydra").mkdir()
    (target / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    forged(target)
    return target


def tamper(run_dir: Path, change) -> None:
    path = run_dir / ".hydra" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    change(config)
    path.write_text(yaml.safe_dump(config))
    forged(run_dir)


def remote_dense(url: str):
    def change(config):
        config["retriever"] = {"kind": "dense", "backend": "http", "base_url": url, "model": "fake", "api_key_env": ENV}
    return change


def files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


# ----------------------------------------------------------------- 1. reproduce treats a run as data


@pytest.mark.slow
def test_reproduce_of_a_tampered_run_sends_no_request(run, server, tmp_path):
    tamper(run, remote_dense(server.url))
    done = run_cli(str(run), cwd=tmp_path, command="reproduce", env={ENV: SECRET})
    assert done.returncode == 2, done.stderr
    assert server.requests == []
    assert "receval: error:" in done.stderr and "Traceback" not in done.stderr
    assert f"retriever.base_url={server.url}" in done.stderr and "--allow-remote" in done.stderr
    assert SECRET not in done.stdout + done.stderr


@pytest.mark.slow
def test_allow_remote_names_host_and_variable_before_the_first_request(run, server, tmp_path):
    tamper(run, remote_dense(server.url))
    done = run_cli(str(run), "--allow-remote", cwd=tmp_path, command="reproduce", env={ENV: SECRET})
    assert server.requests, done.stderr  # the user allowed it: the request went out
    host = server.url.split("/")[2]
    notice = f"sends requests to {host} with the key from ${ENV}"
    assert notice in done.stderr
    assert done.stderr.index(notice) < done.stderr.index("receval: error:")  # before the refusal of the 401
    assert SECRET not in done.stdout + done.stderr


def test_an_http_backend_without_a_url_is_refused_too(run, tmp_path):
    tamper(run, lambda c: c["retriever"].update(backend="http"))
    with pytest.raises(RecevalError, match=r"retriever.backend='http' would send requests"):
        reproduce.reproduce(run)


def test_a_credentialed_url_is_refused_without_showing_the_credentials(run):
    tamper(run, remote_dense(f"http://user:{KEY}@127.0.0.1:9/v1"))
    with pytest.raises(RecevalError) as caught:
        reproduce.reproduce(run)
    assert "retriever.base_url=http://127.0.0.1:9/v1" in str(caught.value) and KEY not in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["_target_", "target"])
def test_a_config_naming_code_is_refused_without_allow_code(run, tmp_path, key):
    canary = tmp_path / "canary.txt"
    canary.write_text("intact")
    tamper(run, lambda c: c["retriever"].update(extra={key: "builtins.open", "file": str(canary), "mode": "w"}))
    done = run_cli(str(run), cwd=tmp_path, command="reproduce")
    assert done.returncode == 2 and done.stderr.count("receval: error:") == 1, done.stderr
    assert f"retriever.extra.{key}='builtins.open'" in done.stderr and "--allow-code" in done.stderr
    assert canary.read_text() == "intact"


@pytest.mark.slow
def test_an_interpolation_is_never_evaluated(run, tmp_path):
    value = "${oc.env:" + ENV + "}"
    tamper(run, lambda c: c["dataset"].update(name=value))
    info = json.loads((run / "run.json").read_text())
    info["config"]["dataset"]["name"] = value  # no resolved value saved either
    (run / "run.json").write_text(json.dumps(info))
    forged(run)
    done = run_cli(str(run), cwd=tmp_path, command="reproduce", env={ENV: SECRET})
    assert done.returncode == 2 and done.stderr.count("receval: error:") == 1, done.stderr
    assert f"dataset.name='{value}' is an interpolation" in done.stderr
    assert SECRET not in done.stdout + done.stderr and files_holding(tmp_path, SECRET) == []


def test_hydras_unresolved_values_are_not_evaluated_and_no_hydra_node_is_kept(run, tmp_path):
    # Hydra saves cache_dir as written (${oc.env:...}) and so does run.json: a setting that does
    # not change results is re-run with receval's own default instead, the run's text never evaluated
    tamper(run, lambda c: c.update(hydra={"callbacks": {"x": {"_target_": "builtins.open", "file": "f"}}}))
    assert json.loads((run / "run.json").read_text())["config"]["cache_dir"].startswith("${oc.env:")
    result = reproduce.reproduce(run, tmp_path / "again")
    assert result.identical
    saved = yaml.safe_load((tmp_path / "again" / ".hydra" / "config.yaml").read_text())
    assert "hydra" not in saved and "${" not in json.dumps(saved)
    assert saved["cache_dir"] == os.environ["RECEVAL_CACHE_DIR"]


def test_docs_recommend_no_plain_hydra_rerun_of_a_saved_config():
    docs = "".join(p.read_text() for p in sorted((ROOT / "docs" / "pages").rglob("*.md")))
    text = (ROOT / "README.md").read_text() + docs + (ROOT / "receval" / "cli" / "reproduce.py").read_text()
    assert "-cp /ABSOLUTE" not in text and "--allow-remote" in docs


def test_reach_rules_are_generic_over_future_components():
    config = {
        "retriever": {"kind": "python", "target": "mypkg.Retriever"},
        "rerank": {"kind": "llm", "base_url": "https://api.example.com/v1", "api_key_env": "OPENAI_API_KEY"},
        "index": {"uri": "db://remote-table"},
        "store": {"uri": "/local/lancedb", "url": None},
    }
    found = {(r.key, r.what, r.envs) for r in trust.reaches(config)}
    assert found == {
        ("retriever.target", "code", ()),
        ("rerank.base_url", "remote", ("OPENAI_API_KEY",)),
        ("index.uri", "remote", ()),
    }


# ----------------------------------------------------------------- 2. keys on the command line


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, override",
    [
        ("run", f"retriever.api_key_env={KEY}"),
        ("run", "retriever.api_key_env=AKIAIOSFODNN7EXAMPLE"),
        (None, f"retriever.base_url=http://user:{KEY}@127.0.0.1:9/v1"),
        ("synth", f"synth.api_key_env={KEY}"),
    ],
)
def test_a_pasted_key_is_refused_before_anything_is_written(tmp_path, command, override):
    other = "synth.model=m" if command == "synth" else "retriever=dense"
    done = run_cli(override, other, cwd=tmp_path, command=command)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("receval: error:") == 1 and "Traceback" not in done.stderr
    assert override.split("=", 1)[0] in done.stderr and "nothing was written" in done.stderr
    secret = override.split("=", 1)[1]
    assert secret not in done.stdout + done.stderr and KEY not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no run folder, no .hydra/ with the key


def test_variable_names_and_plain_urls_pass():
    assert argv_problems([
        "retriever.api_key_env=OPENAI_API_KEY", "synth.api_key_env=null", "retriever.base_url=http://h:8/v1",
        "retriever=bm25,tfidf", "-m", "hydra.run.dir=/tmp/x",
    ]) == []
    assert len(argv_problems([f"retriever.api_key_env=OPENAI_API_KEY,{KEY}"])) == 1  # a sweep value


# ----------------------------------------------------------------- 4. outputs never destroy inputs


@pytest.fixture
def beir(tmp_path) -> Path:
    folder = tmp_path / "DATASET"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_export_qrels_into_a_dataset_is_refused(run, beir, tmp_path, capsys):
    qrels = beir / "qrels" / "test.tsv"
    before = qrels.read_bytes()
    assert exit_code(export.main, [run, "--trec", tmp_path / "r.txt", "--qrels", qrels]) == 2
    assert qrels.read_bytes() == before and not (tmp_path / "r.txt").exists()
    assert f"inside the dataset folder {beir.resolve()}" in capsys.readouterr().err
    assert exit_code(export.main, [run, "--trec", tmp_path / "r.txt", "--qrels", qrels, "--force"]) == 2


@pytest.mark.parametrize(
    "main, flag", [(report.main, "--out"), (report.main, "--plot"), (export.main, "--trec")]
)
def test_an_output_inside_the_run_read_is_refused_even_with_force(run, main, flag, capsys):
    results = run / "results.parquet"
    before = results.read_bytes()
    assert exit_code(main, [run, flag, results, "--force"]) == 2
    assert results.read_bytes() == before
    err = capsys.readouterr().err
    assert err.count("receval: error:") == 1 and f"{flag} {results}" in err and "reads" in err


def test_compare_out_inside_a_run_is_refused(run, capsys):
    assert exit_code(compare.main, [run, run, "--out", run / "run.json", "--format", "json"]) == 2
    assert "--out" in capsys.readouterr().err


def test_a_directory_as_output_file_is_one_clear_message(run, tmp_path, capsys):
    (tmp_path / "outdir").mkdir()
    assert exit_code(report.main, [run, "--format", "csv", "--out", tmp_path / "outdir"]) == 2
    err = capsys.readouterr().err
    assert err.count("receval: error:") == 1 and "is a directory; give the name of a file" in err


def test_an_existing_file_needs_force(run, tmp_path, capsys):
    out = tmp_path / "report.csv"
    out.write_text("keep me")
    assert exit_code(report.main, [run, "--format", "csv", "--out", out]) == 2
    assert out.read_text() == "keep me" and "pass --force" in capsys.readouterr().err
    assert exit_code(report.main, [run, "--format", "csv", "--out", out, "--force"]) == 0
    assert out.read_text() != "keep me" and "rr" in out.read_text()
    fresh = tmp_path / "run.trec"
    assert exit_code(export.main, [run, "--trec", fresh]) == 0 and fresh.stat().st_size > 0


def test_synth_out_may_be_appended_to_but_never_into_a_run_or_the_dataset(run, tmp_path, site):
    existing = tmp_path / "questions.synthetic.jsonl"
    existing.write_text("")
    assert check_output(existing, flag="synth.out", existing_ok=True) == existing
    for inside in (run / "q.jsonl", site / "q.jsonl"):
        with pytest.raises(RecevalError, match="synth.out"):
            check_output(inside, flag="synth.out", existing_ok=True)


def test_report_shows_an_interpolation_as_written_and_never_reads_the_variable(run, tmp_path, capsys, monkeypatch):
    value = "${oc.env:" + ENV + "}"
    monkeypatch.setenv(ENV, SECRET)
    other = tmp_path / "other"
    shutil.copytree(run, other)
    tamper(other, lambda c: c["dataset"].update(name=value))
    info = json.loads((other / "run.json").read_text())
    info["config"]["dataset"]["name"] = value
    (other / "run.json").write_text(json.dumps(info))
    forged(other)
    out = tmp_path / "report.json"
    assert exit_code(report.main, [run, other, "--format", "json", "--out", out]) == 0
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err + out.read_text()
    assert value in out.read_text()  # the differing parameter, shown as the run saved it
