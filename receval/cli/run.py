"""The thin Hydra shells: compose a config, call a plain function.

``receval`` composes ``conf/config.yaml`` and calls :func:`run_one`;
``receval synth`` composes ``conf/synth.yaml`` (see :mod:`receval.synth.__main__`).
Exit status 2 for every user error: a ``RecevalError`` raised by the task, and a
config Hydra cannot compose (a misspelt key, a wrong type), which Hydra itself
reports in one message and would exit 1 for. A job never ends the command with
status 0 before its sweep is done (a stray ``sys.exit(0)`` is status 2); Ctrl-C (or a
KeyboardInterrupt from user code) exits 130. Either way a sweep that stops early
says which of its jobs finished (:func:`receval.cli.resume.stopped`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

# Arrow's buffers on the C library's allocator in a run's process, set before pyarrow loads:
# what the results writer frees goes back to the system (core.machine.give_back_memory),
# where pyarrow's default mimalloc pool keeps its pages, 30-50 MiB above the
# 100,000-passage run's peak (docs/pages/benchmarks.md). A pool the user chose is kept.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from receval.run import config as config_schema
from receval.run import pipeline
from receval.cli import objective, preflight, resume
from receval.clients.http import quiet_http_logs
from receval.run.argv import check_argv
from receval.datasets import load_dataset
from receval.core.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, RecevalError, exit_on_error
from receval.cli.resume import finished_run
from receval.results.claim import taken
from receval.results.format import CONFIG_PATH, HYDRA_DIR, OVERRIDES_PATH
from receval.results.run_writer import seal_again
from receval.core.overrides import swept_suffix
from receval.run.spec import run_spec


def hydra_command(config_name: str, task: Callable[[object], object]) -> Callable[[], None]:
    """An entry point: Hydra composes ``config_name`` and calls ``task(cfg)`` per job
    (what it returns goes to the sweeper: Optuna maximises it). The check the config
    names (``hydra.callbacks.config_check.check_target``) sees a single run's config
    before its folder is made (:class:`receval.cli.preflight.ConfigCheck`) and a
    multirun's every job before the first runs (receval's sweeper).

    The config folder is looked up when the command runs, not at import: a remote
    worker (Ray) imports this module to run a job whose config the driver composed,
    and has no ``conf/`` when receval was shipped as a bare package folder.
    """
    started = False

    def job(cfg):
        nonlocal started
        started = True
        quiet_http_logs()  # Hydra's job logging would copy their unredacted lines to stderr and a file
        with exit_on_error():
            try:
                return task(cfg)
            except SystemExit as stop:
                if stop.code:
                    raise
                raise RecevalError(  # exit 0 here would end a sweep early and report success
                    f"the job ended with SystemExit({stop.code!r}) (a sys.exit in code it ran) before "
                    "writing its results"
                ) from None

    def main() -> None:
        with exit_on_error():  # before Hydra saves the overrides anywhere
            check_argv(sys.argv[1:])
        missing = objective.missing_extra(sys.argv[1:])
        if missing:
            sys.stderr.write(f"receval: error: {missing}\n")
            raise SystemExit(EXIT_USER_ERROR)
        use_sweeper()
        entry = hydra.main(version_base="1.3", config_path=config_schema.config_dir(), config_name=config_name)
        try:
            with preflight.unknown_overrides_named():  # "did you mean", not Hydra's hint to force-add a key
                entry(job)()
        except KeyboardInterrupt:  # Ctrl-C, or raised by user code: stop, say what finished
            sys.stderr.write("receval: interrupted (KeyboardInterrupt); a job stopped midway wrote no results\n")
            resume.stopped("KeyboardInterrupt")
            raise SystemExit(EXIT_INTERRUPTED) from None
        except SystemExit as stop:
            if stop.code == 1 and not started:  # Hydra stopped before any job ran here
                sys.stderr.write(
                    "receval: error: see Hydra's message above: a config it could not compose "
                    "(fix the override or file it names), or a job that failed on a remote launcher\n"
                )
                raise SystemExit(EXIT_USER_ERROR) from None
            if stop.code:
                resume.stopped("an error")
            raise

    return main


def use_sweeper() -> None:
    """Make receval's sweeper (the default ``hydra/sweeper``) known to Hydra. Hydra finds plugins by scanning ``hydra_plugins``, which misses
    a module served by an editable install's import hook: registered here in both cases.
    Done when a command starts, not at import: a Ray worker has no such module; and
    after Hydra's scan, which re-executes the module of the sweeper it derives from."""
    from receval.run.hydra_internals import register_sweeper, scan_plugins

    scan_plugins()  # first: the scan re-executes the module of the sweeper receval's derives from
    from hydra_plugins.receval_sweeper import RecevalSweeper

    register_sweeper(RecevalSweeper)


def group_options(*groups: str) -> str:
    """``--help``'s list of config groups and their options, read from ``conf/``."""
    root = Path(config_schema.config_dir())
    lines = []
    for group in groups:
        options = sorted(path.stem for path in (root / group).glob("*.yaml"))
        if group == "hydra/launcher":
            options = ["basic", "joblib", *options]
        lines.append(f"{group}: {', '.join(options)}")
    return "\n".join(lines)


def hydra_saved(cfg) -> dict[str, str]:
    """The files Hydra saved for this job (``.hydra/config.yaml``, ``overrides.yaml``
    and ``hydra.yaml``) as it saved them, for the run to write again as its own
    (:mod:`receval.results.claim`: another job's Hydra may save over them); none when
    Hydra saves no ``.hydra/`` folder. Called before anything changes ``cfg``."""
    hydra = HydraConfig.get()
    if hydra.output_subdir != HYDRA_DIR:
        return {}
    return {CONFIG_PATH: OmegaConf.to_yaml(cfg), OVERRIDES_PATH: OmegaConf.to_yaml(hydra.overrides.task),
            f"{HYDRA_DIR}/hydra.yaml": OmegaConf.to_yaml(HydraConfig.instance().cfg)}


def run_one(cfg) -> float | None:
    """One job of ``receval``: skip it if its results are there, else run it, holding its
    folder throughout (a second run into the same folder is refused, naming this one).
    Returns the run's objective (``objective.metric`` on ``objective.split``) to a
    sweeper that uses it (Optuna); a grid sweep or a single run ignores it."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    saved = hydra_saved(cfg)
    spec = run_spec(cfg)  # the callback or the sweeper built it: reused, not checked again
    dataset = load_dataset(spec.config.dataset)  # its fingerprint is part of what resume compares
    with taken(run_dir) as claim:
        stored = finished_run(run_dir, spec.config_hash, dataset.fingerprint)
        if stored is not None:
            print(f"skipped: {run_dir} already holds the results of this config and dataset", flush=True)
            seal_again(claim, stored.run_id, saved)  # Hydra saved this job's config again: one run with it
        else:
            result = pipeline.run(spec, run_dir, dataset, claim.start(saved))
            overrides = list(HydraConfig.get().overrides.task)
            print(pipeline.summary_line(spec.config, result) + swept_suffix(overrides, sys.argv[1:]), flush=True)
    if objective.sweeper_uses_it():
        return objective.value(spec.config, run_dir, required=True)
    return None


OmegaConf.register_new_resolver("receval_groups", group_options, replace=True)
config_schema.register()
main = hydra_command("config", run_one)
