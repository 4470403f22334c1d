"""Shared fixtures: composed configs (as Hydra builds them) and the hand-made site."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from receval.config import config_dir, register

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RECEVAL_SHARED", ROOT.parent / "shared"))

register()


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """Runs made by tests cache chunks and embeddings in a temporary folder, not the repo."""
    os.environ["RECEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture
def make_config():
    """Compose ``conf/config.yaml`` with overrides, exactly as ``python -m receval`` would."""

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


def run_cli(*args: str, cwd: Path, module: str = "receval", env: dict | None = None):
    """Run ``python -m <module> args`` as a user would; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def sweep_of(tmp_path_factory, *overrides: str) -> Path:
    """Run ``python -m receval OVERRIDES -m`` as a user would; returns the sweep folder."""
    where = tmp_path_factory.mktemp("sweep")
    done = run_cli(*overrides, f"hydra.sweep.dir={where}/s", "-m", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "s"


def run_of(tmp_path_factory, *overrides: str) -> Path:
    """One run on a config composed with ``overrides``, in-process; returns its folder."""
    from hydra import compose

    from receval.pipeline import run

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    run_dir = tmp_path_factory.mktemp("run")
    run(cfg, run_dir)
    return run_dir


@pytest.fixture(scope="session")
def readme_sweep(tmp_path_factory) -> Path:
    """The README's sweep (bm25, tfidf x 20, 40, 120 words), run once as a user runs it."""
    return sweep_of(tmp_path_factory, "retriever=bm25,tfidf", "chunking.max_words=20,40,120")


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
