"""Trust, second pass (issue 23 section 1): no path from a stored config to a secret.

Every path that turns a stored run's config into something runnable -- ``reproduce``
and ``select --out`` (then the README's re-run of ``best.yaml``) -- walks the parsed
YAML itself: an interpolation is never evaluated whatever shape its key has, a config
that sends requests or names code needs the flags, the announcement under
``--allow-remote`` names every host and every variable sent, and no file written holds
an interpolation or a secret. A loopback server counts the requests that leave.
"""

from __future__ import annotations

import io
import json
import shutil
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml
from conftest import exit_code, loopback, run_cli, run_of
from forge import forged

from receval.cli import select
from receval.cli import reproduce
from receval.render import best_yaml
from receval.clients import http as remote
from receval.core import trust
from receval.core.errors import RecevalError
from receval.results import load_runs
from receval.results.configs import runnable_config
from receval.run.written import own_default

SECRET = "s3cr3t-Zq8v3LkR0-value"
ENV = "RECEVAL_TRUST_TEST_SECRET"
INTERP = "${oc.env:" + ENV + "}"


class Recorder(BaseHTTPRequestHandler):
    """Records every request (path, headers, body) and answers an empty search result."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.path, dict(self.headers), body.decode("utf-8", "replace")))
        payload = b'{"results": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server():
    with loopback(Recorder) as httpd:
        httpd.requests = []
        httpd.url = f"{httpd.root}/search"
        yield httpd


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    return run_of(tmp_path_factory, "retriever=bm25")


@pytest.fixture
def run(base_run, tmp_path, monkeypatch) -> Path:
    """A copy of a bm25 run with ``.hydra/config.yaml`` as Hydra saves it; the secret set."""
    monkeypatch.setenv(ENV, SECRET)
    target = tmp_path / "run"
    shutil.copytree(base_run, target)
    config = json.loads((target / "run.json").read_text())["config"]
    (target / ".hydra").mkdir()
    (target / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    forged(target)
    return target


def merged(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def tamper(run_dir: Path, hydra: dict, saved: dict | None = None) -> None:
    """Merge ``hydra`` into the run's ``.hydra/config.yaml`` and ``saved`` into run.json's config."""
    path = run_dir / ".hydra" / "config.yaml"
    path.write_text(yaml.safe_dump(merged(yaml.safe_load(path.read_text()), hydra), allow_unicode=True))
    forged(run_dir)
    if saved:
        info = json.loads((run_dir / "run.json").read_text())
        info["config"] = merged(info["config"], saved)
        (run_dir / "run.json").write_text(json.dumps(info))
        forged(run_dir)


def files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def select_out(run_dir: Path, out: Path, *flags: str) -> None:
    """``select RUN --out OUT`` in-process, raising its RecevalError."""
    (best,) = load_runs([run_dir])
    config = best_yaml.best_config(best, allow_remote="--allow-remote" in flags, allow_code="--allow-code" in flags,
                                   fallback=own_default)  # as cli/select passes it
    best_yaml.write_best(best, out, "the only run", config)


# ----------------------------------------------------------------- keys of every shape, every path

# (what is written into .hydra/config.yaml; what run.json holds beside it: a value a
# path rebuilt from key strings would find and put in the wrong place, else the same as
# written, as a run made now saves it; the label the message names)
SHAPES = {
    "dotted key": ({"cost": {"a.b": INTERP}}, {"cost": {"a": {"b": 1}}}, "cost['a.b']"),
    "integer key": ({"cost": {1: INTERP}}, {"cost": {"1": 1}}, "cost[1]"),
    "quoted key": ({"cost": {"it's \"x\"": INTERP}}, {"cost": {"it's": 1}}, "cost['it\\'s \"x\"']"),
    "top-level dotted key": ({"cost.a": INTERP}, {"cost": {"a": 1}}, "['cost.a']"),
    "unicode key": ({"cost": {"ключ.ü": INTERP}}, {"cost": {"ключ": {"ü": 1}}}, "cost['ключ.ü']"),
    "key like a list index": ({"cost": {"l[0]": INTERP}}, {"cost": {"l": [1]}}, "cost['l[0]']"),
    "list item": ({"cost": {"l": [INTERP]}}, None, "cost.l[0]"),
    "nested in lists": ({"cost": {"l": [{"m": [1, INTERP]}]}}, None, "cost.l[0].m[1]"),
    "inside text": ({"dataset": {"name": f"lib-{INTERP}"}}, None, "dataset.name"),
    "the key itself": ({"cost": {INTERP: 1}}, None, "the key cost['" + INTERP + "']"),
    "retriever.body": (
        {"retriever": {"body": {"a.b": INTERP}}}, {"retriever": {"body": {"a": {"b": "x"}}}}, "retriever.body['a.b']"
    ),
}


def refused(call, where: str, run_dir: Path) -> str:
    with pytest.raises(RecevalError) as caught:
        call()
    message = str(caught.value)
    assert "interpolation" in message and where in message, message
    assert SECRET not in message
    assert files_holding(run_dir.parent, SECRET) == []
    return message


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.slow
def test_reproduce_evaluates_no_interpolation_whatever_its_key(run, tmp_path, shape):
    hydra, saved, where = SHAPES[shape]
    tamper(run, hydra, saved or hydra)
    refused(lambda: reproduce.reproduce(run, tmp_path / "again", allow_remote=True, allow_code=True), where, run)
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.slow
def test_select_out_evaluates_no_interpolation_whatever_its_key(run, tmp_path, shape):
    hydra, saved, where = SHAPES[shape]
    tamper(run, hydra, saved or hydra)
    out = tmp_path / "best.yaml"
    refused(lambda: select_out(run, out, "--allow-remote", "--allow-code"), where, run)
    assert not out.exists()


def test_select_main_refuses_before_writing_anything(run, tmp_path, capsys):
    tamper(run, {"cost": {"a.b": INTERP}}, {"cost": {"a": {"b": 1}}})
    out, plot = tmp_path / "best.yaml", tmp_path / "choice.png"
    assert exit_code(select.main, [run, "--out", out, "--plot", plot, "--allow-remote"]) == 2
    err = capsys.readouterr().err
    assert err.count("receval: error:") == 1 and "cost['a.b']" in err and SECRET not in err
    assert not out.exists() and not plot.exists()


def test_a_value_saved_at_the_same_position_fills_an_interpolation_and_nothing_else():
    data = {"cost": {"a.b": INTERP, 1: INTERP, "l": [INTERP, {"x": INTERP}]}, "hydra": {"x": INTERP}}
    saved = {"cost": {"a.b": 2, "1": 3, "a": {"b": 4}, "l": [5, {"x": "${oc.env:OTHER}"}]}}
    with pytest.raises(RecevalError) as caught:
        trust.fill_interpolations(data, saved, "f.yaml")
    assert [line for line in caught.value.problems] == [
        f"f.yaml: cost[1]='{INTERP}' is an interpolation; a stored run is data and receval evaluates none: "
        f"{trust.RERUN_CONFIG}",
        f"f.yaml: cost.l[1].x='{INTERP}' is an interpolation; a stored run is data and receval evaluates none: "
        f"{trust.RERUN_CONFIG}",
    ]
    shown = trust.fill_interpolations(data, saved, "f.yaml", strict=False)  # for display: kept as written
    assert shown == {"cost": {"a.b": 2, 1: INTERP, "l": [5, {"x": INTERP}]}}


def test_runnable_configs_hold_no_interpolation_and_cache_dir_is_receval_s_own(run, tmp_path, monkeypatch):
    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "mine"))
    from receval.run import written

    monkeypatch.setattr(written, "_OWN", None)  # receval's own default, read now
    saved = json.loads((run / "run.json").read_text())["config"]
    assert saved["cache_dir"] == "${oc.env:RECEVAL_CACHE_DIR,.cache/receval}"  # run.json: as written
    data = runnable_config(run, fallback=own_default)
    assert not trust.holds_interpolation(data) and data["cache_dir"] == str(tmp_path / "mine")
    out = tmp_path / "best.yaml"
    select_out(run, out)
    best = yaml.safe_load(out.read_text())
    assert not trust.holds_interpolation({k: v for k, v in best.items() if k != "hydra"})
    assert {k: v for k, v in best.items() if k not in ("defaults", "hydra")} == data


# ----------------------------------------------------------------- what an allowed remote config announces


def http_search(url: str, **extra) -> dict:
    return {"retriever": {"kind": "http", "url": url, **extra}}


def use_http(run_dir: Path, url: str, **extra) -> None:
    """The run's retriever replaced by an http one (both saved configs)."""
    path = run_dir / ".hydra" / "config.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **http_search(url, **extra)}))
    forged(run_dir)


def test_select_out_of_a_remote_run_needs_allow_remote_and_names_every_variable(run, tmp_path, capsys):
    tamper(run, {
        **http_search("http://search.example:9200/_search", headers={"Authorization": "ES_AUTH", "X-Tenant": "TENANT"}),
        "rerank": {"kind": "llm", "base_url": "https://api.example.com/v1", "api_key_env": "OPENAI_API_KEY"},
    })
    out = tmp_path / "best.yaml"
    with pytest.raises(RecevalError, match=r"retriever.url=http://search.example:9200/_search would send"):
        select_out(run, out)
    assert not out.exists()
    select_out(run, out, "--allow-remote")
    err = capsys.readouterr().err
    assert "retriever.url sends requests to search.example:9200 with the keys from $ES_AUTH, $TENANT" in err
    assert "rerank.base_url sends requests to api.example.com with the key from $OPENAI_API_KEY" in err
    assert yaml.safe_load(out.read_text())["retriever"]["headers"] == {"Authorization": "ES_AUTH", "X-Tenant": "TENANT"}


@pytest.mark.parametrize("form", [" {url} ", "\t{url}\n", "{url}\r\n", "HTTP://{host}/search", "\x00 {url}"])
def test_a_url_is_checked_as_the_client_normalises_it(run, form):
    url, host = "http://127.0.0.1:9/search", "127.0.0.1:9"
    value = form.format(url=url, host=host)
    client = remote.Client(value, None)  # what would be sent: the one normalisation, api.split_url
    assert client.root.split("/")[2] == host
    for place in ({"retriever": {"extra": {"server": value}}}, http_search(value)):
        found = [r for r in trust.reaches(place) if r.what == "remote"]
        assert found, place
        with pytest.raises(RecevalError, match="would send requests"):
            trust.check_reach(place, "f", allow_remote=False, allow_code=False)
        stream = io.StringIO()
        trust.check_reach(place, "f", allow_remote=True, allow_code=False, stream=stream)
        assert f"sends requests to {host} with no key" in stream.getvalue()


def test_a_stored_url_with_a_secret_is_shown_without_it(run):
    key = "sk-test-Zq8v3LkR0secret"
    for url in (f" http://user:{key}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?api_key={key}"):
        place = {"retriever": {"kind": "dense", "backend": "http", "base_url": url}}
        for allow in (False, True):
            with pytest.raises(RecevalError) as caught:
                trust.check_reach(place, "f", allow_remote=allow, allow_code=False, stream=io.StringIO())
            assert "retriever.base_url=http://127.0.0.1:9/v1" in str(caught.value) and key not in str(caught.value)


# ----------------------------------------------------------------- no request leaves (loopback)


@pytest.mark.slow
def test_no_request_leaves_for_a_tampered_run_through_reproduce_or_select_and_the_readme_rerun(run, server, tmp_path):
    tamper(run, http_search(server.url, headers={"Authorization": ENV}, body={"a.b": INTERP}),
           {"retriever": {"body": {"a": {"b": "x"}}}})
    env = {ENV: SECRET}
    for flags in ([], ["--allow-remote"]):
        done = run_cli(str(run), *flags, cwd=tmp_path, command="reproduce", env=env)
        assert done.returncode == 2 and "retriever.body['a.b']" in done.stderr, done.stderr
        assert SECRET not in done.stdout + done.stderr
        conf = tmp_path / f"conf{len(flags)}"
        conf.mkdir()
        done = run_cli(str(run), "--out", str(conf / "best.yaml"), *flags, cwd=tmp_path, command="select", env=env)
        assert done.returncode == 2 and SECRET not in done.stdout + done.stderr, done.stderr
        rerun = run_cli("-cp", str(conf), "-cn", "best", f"hydra.run.dir={tmp_path}/rerun", cwd=tmp_path, env=env)
        assert rerun.returncode != 0 and SECRET not in rerun.stdout + rerun.stderr  # no best.yaml to run
    assert server.requests == []
    assert files_holding(tmp_path, SECRET) == []


@pytest.mark.slow
def test_an_allowed_remote_choice_reruns_against_the_server_it_named(run, server, tmp_path):
    """The control for the test above: the same harness sees requests when they are allowed."""
    use_http(run, server.url, headers={"Authorization": ENV})
    conf = tmp_path / "conf"
    conf.mkdir()
    env = {ENV: SECRET}
    done = run_cli(str(run), "--out", str(conf / "best.yaml"), cwd=tmp_path, command="select", env=env)
    assert done.returncode == 2 and "--allow-remote" in done.stderr and not (conf / "best.yaml").exists()
    done = run_cli(str(run), "--out", str(conf / "best.yaml"), "--allow-remote", cwd=tmp_path,
                   command="select", env=env)
    assert done.returncode == 0, done.stderr
    host = server.url.split("/")[2]
    assert f"retriever.url sends requests to {host} with the key from ${ENV}" in done.stderr
    assert server.requests == []  # select itself sends nothing
    rerun = run_cli("-cp", str(conf), "-cn", "best", f"hydra.run.dir={tmp_path}/rerun", cwd=tmp_path, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert server.requests and all(headers["Authorization"] == SECRET for _, headers, _ in server.requests)
    assert files_holding(tmp_path, SECRET) == []
