"""The thin Hydra shells: compose a config, call a plain function.

``python -m receval`` composes ``conf/config.yaml`` and calls :func:`run_one`;
``python -m receval.synth`` composes ``conf/synth.yaml`` (see :mod:`receval.synth_cli`).
Exit status 2 for every user error: a ``RecevalError`` raised by the task, and a
config Hydra cannot compose (a misspelt key, a wrong type), which Hydra itself
reports in one message and would exit 1 for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig

from receval import config as config_schema
from receval import pipeline
from receval.errors import EXIT_USER_ERROR, exit_on_error
from receval.resume import finished
from receval.swept import swept_suffix


def hydra_command(config_name: str, task: Callable[[object], None]) -> Callable[[], None]:
    """An entry point: Hydra composes ``config_name`` and calls ``task(cfg)`` per job."""
    started = False

    @hydra.main(version_base="1.3", config_path=config_schema.config_dir(), config_name=config_name)
    def job(cfg) -> None:
        nonlocal started
        started = True
        with exit_on_error():
            task(cfg)

    def main() -> None:
        try:
            job()
        except SystemExit as stop:
            if stop.code == 1 and not started:  # Hydra stopped before any job ran here
                sys.stderr.write(
                    "receval: error: see Hydra's message above: a config it could not compose "
                    "(fix the override or file it names), or a job that failed on a remote launcher\n"
                )
                raise SystemExit(EXIT_USER_ERROR) from None
            raise

    return main


def run_one(cfg) -> None:
    """One job of ``python -m receval``: skip it if its results are there, else run it."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    if finished(run_dir, pipeline.config_hash_of(cfg)):
        print(f"skipped: {run_dir} already holds the results of this config", flush=True)
        return
    result = pipeline.run(cfg, run_dir)
    overrides = list(HydraConfig.get().overrides.task)
    print(pipeline.summary_line(cfg, result) + swept_suffix(overrides, sys.argv[1:]), flush=True)


config_schema.register()
main = hydra_command("config", run_one)
