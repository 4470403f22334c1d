"""A run or sweep is checked before anything runs: a repeated cutoff is a config error,
every job of a sweep is checked before job 0 (and composed once), and receval's sweeper
stays picklable as Hydra's own for remote launchers."""

from __future__ import annotations

import pytest
from conftest import run_cli

from receval.results.format import RESULTS


def test_repeated_cutoff_is_a_config_error(make_config):
    from receval.run.config import check
    from receval.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"metrics.ks=\[1, 1, 3\] names a cutoff twice") as error:
        check(make_config("metrics.ks=[1,1,3]"))
    assert sum("cutoff" in p for p in error.value.problems) == 1  # one rule, one message


@pytest.mark.slow
def test_repeated_cutoff_on_the_command_line(tmp_path):
    done = run_cli("metrics.ks=[1,1,3]", f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path)
    assert done.returncode == 2
    assert "names a cutoff twice" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r" / RESULTS).exists()


@pytest.mark.slow
def test_every_sweep_value_is_checked_before_job_0(tmp_path):
    sweep = tmp_path / "s"
    done = run_cli("chunking.max_words=20,0,40", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "chunking.max_words=0" in lines[0] and "sweep job 1" in lines[0], lines
    assert not sweep.exists()  # job 0 did not run


CHECKED: list = []  # what recording_check saw, in order


def recording_check(cfg) -> None:
    """A config check named on the command line (``hydra.callbacks.config_check.check_target``):
    records each job it sees and refuses depth 7."""
    from receval.core.errors import ConfigError

    CHECKED.append((cfg.retriever.kind, cfg.depth))
    if cfg.depth == 7:
        raise ConfigError("depth=7: not liked")


@pytest.fixture
def sweep_in_process(monkeypatch, tmp_path):
    """Run ``receval ARGS -m`` in this process with a recording task and
    check (passed in through the config, as conf/config.yaml names the real one);
    returns (exit code, checked, ran, folder)."""
    import sys

    from hydra.core.global_hydra import GlobalHydra

    from receval.cli.run import hydra_command

    # Hydra's logging setup (logging.config.dictConfig) closes every handler, pytest's own
    # log capture too: left out here, after the plugin scan that re-executes the launcher
    import hydra._internal.core_plugins.basic_launcher as launcher
    import hydra._internal.hydra as hydra_app
    import hydra.core.utils as hydra_utils
    from hydra.core.plugins import Plugins

    Plugins.instance()
    for module in (launcher, hydra_app, hydra_utils):
        monkeypatch.setattr(module, "configure_log", lambda *args, **kwargs: None)

    def sweep(*args: str):
        CHECKED.clear()
        ran = []
        main = hydra_command("config", lambda cfg: ran.append((cfg.retriever.kind, cfg.depth)))
        folder = tmp_path / "sweep"
        check = f"hydra.callbacks.config_check.check_target={__name__}.recording_check"
        monkeypatch.setattr(sys, "argv", ["receval", *args, check, f"hydra.sweep.dir={folder}", "-m"])
        GlobalHydra.instance().clear()  # hydra.main starts its own
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
        finally:
            GlobalHydra.instance().clear()
        return code, list(CHECKED), ran, folder

    return sweep


@pytest.mark.slow
def test_the_sweeper_checks_every_job_before_job_0(sweep_in_process, capsys):
    code, checked, ran, folder = sweep_in_process("retriever=bm25,tfidf", "depth=5,7")
    assert code == 2
    assert checked == [("bm25", 5), ("bm25", 7), ("tfidf", 5), ("tfidf", 7)]
    assert ran == [] and not folder.exists()  # nothing ran, nothing was written
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "receval: error: depth=7: not liked [sweep job 1 (retriever=bm25 depth=7), "
        "3 (retriever=tfidf depth=7)]; nothing was run"
    )


@pytest.mark.slow
def test_the_sweeper_composes_each_job_once(sweep_in_process, monkeypatch):
    """Hydra's basic sweeper composes every job twice (to validate, to launch); receval's
    hands the launcher the config it checked: one composition per job, the same values."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    composed = []
    original = ConfigLoaderImpl.load_sweep_config

    def counting(self, master_config, sweep_overrides):
        composed.append(tuple(sweep_overrides))
        return original(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counting)
    code, checked, ran, folder = sweep_in_process("retriever=bm25,tfidf", "depth=5,6,8")
    assert code == 0
    expected = [(kind, depth) for kind in ("bm25", "tfidf") for depth in (5, 6, 8)]
    assert checked == ran == expected
    assert len(composed) == len(set(composed)) == 6
    assert sorted(p.name for p in folder.iterdir()) == [".receval-sweep.json", "0", "1", "2", "3", "4", "5", "multirun.yaml"]


def test_the_sweepers_loader_pickles_as_hydras():
    """A remote launcher (Ray, joblib) ships its context to workers: the configs kept
    for the launcher stay on the driver."""
    import pickle

    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.core.plugins import Plugins

    Plugins.instance()  # the scan first (see receval.cli.run.use_sweeper)
    from hydra_plugins.receval_sweeper import ComposedOnce

    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(None))
    wrapped = ComposedOnce(loader)
    wrapped._composed[(0, ("depth=5",))] = ["kept"]
    shipped = pickle.loads(pickle.dumps(wrapped))
    assert type(shipped) is ConfigLoaderImpl

