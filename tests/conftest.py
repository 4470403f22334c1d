"""Shared fixtures: composed configs (as Hydra builds them) and the hand-made site."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from receval.core import progress
from receval.run.config import config_dir, register, register_synth
from receval.core.errors import RecevalWarning
from receval.retrievers.base import Stage

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RECEVAL_SHARED", ROOT.parent / "shared"))

register()
register_synth()  # conf/synth.yaml's schema: any test may compose it, whichever file imported first

# ----------------------------------------------------------------- markers: slow and dense
# ``make test-fast`` deselects them, so a test that needs one and lacks it would slow the
# fast run down. A test (or a fixture or module helper it calls) that calls run_cli,
# sweep_of or subprocess.* without @pytest.mark.slow fails collection; at run time any
# subprocess started without ``slow``, or the real model loaded without ``dense``, fails
# the test (this catches what the source check cannot see).

SPAWNERS = {"run_cli", "sweep_of"}
_CALL = re.compile(r"(?<![\w.])(subprocess\.(?:run|Popen|call|check_call|check_output)|[A-Za-z_]\w*)\s*\(")
_SPAWNS: dict = {}


def _spawns(func) -> str | None:
    """The call by which ``func`` (or a test-module function it calls) starts a subprocess."""
    func = inspect.unwrap(func)
    if func in _SPAWNS:
        return _SPAWNS[func]
    _SPAWNS[func] = None  # a cycle of helpers ends here
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    found = None
    for name in dict.fromkeys(_CALL.findall(source)):
        if name in SPAWNERS or name.startswith("subprocess."):
            found = name
        else:
            callee = getattr(func, "__globals__", {}).get(name)
            if inspect.isfunction(callee) and Path(callee.__code__.co_filename).parent == FIXTURES.parent:
                found = _spawns(callee) and name
        if found:
            break
    _SPAWNS[func] = found
    return found


def pytest_collection_modifyitems(config, items):
    unmarked = []
    for item in items:
        if not isinstance(item, pytest.Function) or item.get_closest_marker("slow"):
            continue
        funcs = [("", item.function)] + [
            (f"fixture {name}: ", defs[-1].func) for name, defs in item._fixtureinfo.name2fixturedefs.items()
        ]
        for where, func in funcs:
            call = _spawns(func)
            if call:
                unmarked.append(f"{item.nodeid}: {where}calls {call}(...), which starts a subprocess")
                break
    if unmarked:
        raise pytest.UsageError(
            "tests that start a subprocess need @pytest.mark.slow (make test-fast skips them):\n  "
            + "\n  ".join(unmarked)
        )


def _refuse(item, what: str, marker: str):
    def refuse(*args, **kwargs):
        pytest.fail(f"{item.nodeid} {what} without @pytest.mark.{marker}: mark it", pytrace=False)

    return refuse


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _marker_guard(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _marker_guard(item):
        yield


def _marker_guard(item):
    patch = pytest.MonkeyPatch()
    if not item.get_closest_marker("slow"):
        patch.setattr(subprocess.Popen, "__init__", _refuse(item, "starts a subprocess", "slow"))
    if not item.get_closest_marker("dense"):
        patch.setattr("receval.encoders.local.load_sentence_transformer", _refuse(item, "loads the real model", "dense"))
    return _undone(patch)


class _undone:
    def __init__(self, patch):
        self.patch = patch

    def __enter__(self):
        return self.patch

    def __exit__(self, *exc):
        self.patch.undo()


# ------------------------------------------------- each composition made once per worker
# A composition costs 0.2-0.5 s (Hydra's defaults tree, then OmegaConf merges) and tests
# ask for the same one again and again (``retriever=bm25`` 26 times in make test-fast).
# What Hydra composes from conf/ alone is kept per worker and handed out as a deep copy.
# Only the compose API is kept (a command's composition configures logging, so it runs),
# only for conf/ with Hydra's and the structured sources (a test's own config folder or an
# added search path is composed afresh), and a store written to since (a test registering
# a kind) or another working directory (hydra.runtime.cwd) is a new key. A failed
# composition is never kept: its error is raised each time.

_COMPOSED: dict = {}
_STORE_WRITES = [0]


def _count_store_writes():
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.store

    def counted(self, *args, **kwargs):
        _STORE_WRITES[0] += 1
        return store(self, *args, **kwargs)

    ConfigStore.store = counted


def _keep_compositions():
    import copy

    from hydra._internal.hydra import Hydra
    from omegaconf import OmegaConf

    compose_config = Hydra.compose_config
    default_path = [("hydra", "pkg://hydra.conf"), ("main", config_dir()), ("schema", "structured://")]

    def kept(self, config_name, overrides, run_mode, with_log_configuration=False, from_shell=True,
             validate_sweep_overrides=True):
        path = [(p.provider, p.path) for p in self.config_loader.config_search_path.get_path()]
        if with_log_configuration or path != default_path:
            return compose_config(self, config_name, overrides, run_mode, with_log_configuration,
                                  from_shell, validate_sweep_overrides)
        key = (config_name, tuple(overrides), run_mode, from_shell, validate_sweep_overrides,
               _STORE_WRITES[0], os.getcwd())
        if key not in _COMPOSED:
            _COMPOSED[key] = compose_config(self, config_name, overrides, run_mode, False, from_shell,
                                            validate_sweep_overrides)
        composed = copy.deepcopy(_COMPOSED[key])
        OmegaConf.clear_cache(composed)  # the copy's resolved ${now:...} are its own, never the kept one's
        return composed

    Hydra.compose_config = kept


_count_store_writes()
_keep_compositions()


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """Runs made by tests cache chunks and embeddings in a temporary folder, not the repo."""
    os.environ["RECEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True, scope="session")
def quiet_progress():
    """No plain progress lines unless a test asks for them (RECEVAL_PROGRESS_SECONDS): a
    run slowed past 10 s by a busy machine would otherwise add lines to the stderr that
    tests read. tests/test_long_runs.py sets the interval it checks."""
    os.environ.setdefault("RECEVAL_PROGRESS_SECONDS", "3600")


@pytest.fixture(autouse=True)
def receval_warnings_on_stderr(monkeypatch):
    """pytest records warnings; receval's are printed as the command line prints them
    (``receval: warning: ...`` on stderr), so a test reads them with capsys.
    ``pytest.warns(RecevalWarning)`` still records them."""
    monkeypatch.setattr(warnings, "showwarning", progress.show_warning)
    warnings.filterwarnings("always", category=RecevalWarning)


@pytest.fixture
def make_config():
    """Compose ``conf/config.yaml`` with overrides, exactly as ``receval`` would."""

    def _compose(*overrides: str):
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            return compose("config", overrides=list(overrides))

    return _compose


@pytest.fixture
def site(tmp_path) -> Path:
    """A copy of the hand-made folder dataset, safe to edit."""
    import shutil

    target = tmp_path / "site"
    shutil.copytree(FIXTURES / "site", target)
    return target


class lazy_import:
    """A reference library a test module names at its top (``ranx = lazy_import("ranx")``),
    imported at first use, skipping that test (``pytest.importorskip``) when it is absent.
    ranx, mlflow and rouge-score take 1-4 s each to import; collected eagerly, every
    worker would pay for them whether or not it runs a test that uses them."""

    def __init__(self, name: str, reason: str | None = None):
        self.name, self.reason = name, reason

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):  # pytest's collection probes (__test__, _fixture_function_marker ...)
            raise AttributeError(attribute)
        return getattr(pytest.importorskip(self.name, reason=self.reason), attribute)


def run_cli(*args: str, cwd: Path, command: str | None = None, env: dict | None = None):
    """Run ``receval [command] args`` (this Python, ``-m receval``) as a user would; returns
    the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "receval", *([command] if command else []), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def sweep_of(tmp_path_factory, *overrides: str) -> Path:
    """Run ``receval OVERRIDES -m`` as a user would; returns the sweep folder."""
    where = tmp_path_factory.mktemp("sweep")
    done = run_cli(*overrides, f"hydra.sweep.dir={where}/s", "-m", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "s"


def run_of(tmp_path_factory, *overrides: str) -> Path:
    """One run on a config composed with ``overrides``, in-process; returns its folder."""
    from hydra import compose

    from receval.run.pipeline import run

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    run_dir = tmp_path_factory.mktemp("run")
    run(cfg, run_dir)
    return run_dir


def sweep_in_process(root: Path, *axes: list[str]) -> Path:
    """A sweep made in-process (no subprocess): one numbered job folder per combination
    of the override lists ``axes`` (``["retriever=bm25", "retriever=tfidf"]``, ...), in
    Hydra's job order, each run as ``receval`` runs it; returns ``root``."""
    from itertools import product

    from receval.run.pipeline import run

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        for job, overrides in enumerate(product(*axes)):
            run(compose("config", overrides=list(overrides)), root / str(job))
    return root


@pytest.fixture(scope="session")
def six_runs(tmp_path_factory) -> Path:
    """The README's sweep (bm25, tfidf x 20, 40, 120 words) made in-process, once per session."""
    return sweep_in_process(tmp_path_factory.mktemp("sweep") / "s", ["retriever=bm25", "retriever=tfidf"],
                            [f"chunking.max_words={w}" for w in (20, 40, 120)])


@pytest.fixture(scope="session")
def readme_sweep(tmp_path_factory) -> Path:
    """The README's sweep (bm25, tfidf x 20, 40, 120 words), run once as a user runs it."""
    return sweep_of(tmp_path_factory, "retriever=bm25,tfidf", "chunking.max_words=20,40,120")


def results_without_timings(run_dir: Path) -> dict:
    """A run's stored results without its latency columns: what must not change when
    only the way it was computed did (a cache rebuilt, a depth capped)."""
    import pyarrow.parquet as pq

    from receval.results.format import RESULTS

    table = pq.read_table(run_dir / RESULTS)
    return {k: v for k, v in table.to_pydict().items() if not k.startswith("latency_ms")}


def exit_code(main, argv) -> int:
    """A command's exit status when called in-process with ``argv``."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as stop:
        return stop.code


def one_error_line(capsys) -> str:
    """The single ``receval: error:`` line a user error printed on stderr."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("receval: error: ")
    return err[0]


@contextmanager
def loopback(handler) -> Iterator[ThreadingHTTPServer]:
    """A threaded HTTP server on 127.0.0.1 (a free port) running ``handler`` until the block
    ends; ``.root`` is its ``http://127.0.0.1:PORT`` address. It polls for shutdown every
    20 ms (the default 0.5 s would add half a second to every test that uses one)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.root = f"http://127.0.0.1:{httpd.server_address[1]}"
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


class PostServer:
    """A loopback HTTP server answering POSTs with ``answer(path, body) -> (status, headers, bytes)``."""

    def __init__(self, answer):
        self.seen: list[tuple[str, dict, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append((self.path, dict(self.headers), body))
                status, headers, raw = answer(self.path, body)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self._running = loopback(Handler)
        self.httpd = self._running.__enter__()
        self.url = self.httpd.root

    def close(self):
        self._running.__exit__(None, None, None)


class Fixed(Stage):
    """A first stage (posing as bm25) ranking every chunk by the same fixed scores."""

    name, floor = "bm25", 0.0

    def __init__(self, scores):
        self.scores = np.asarray(scores, float)

    def fit(self, texts, tie_rank):
        self.tie_rank = tie_rank

    def score(self, questions):
        return np.repeat(self.scores[None, :], len(questions), axis=0)
