"""The thin Hydra shell: compose the config, call :func:`receval.pipeline.run`.

Exit status 2 for every user error: a ``RecevalError`` raised by the run, and a
config Hydra cannot compose (a misspelt key, a wrong type), which Hydra itself
reports in one message and would exit 1 for.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig

from receval import config as config_schema
from receval import pipeline
from receval.errors import EXIT_USER_ERROR, exit_on_error
from receval.resume import finished

config_schema.register()
_started = False


@hydra.main(version_base="1.3", config_path=config_schema.config_dir(), config_name="config")
def _run(cfg) -> None:
    global _started
    _started = True
    with exit_on_error():
        run_dir = Path(HydraConfig.get().runtime.output_dir)
        if finished(run_dir, pipeline.config_hash_of(cfg)):
            print(f"skipped: {run_dir} already holds the results of this config", flush=True)
            return
        result = pipeline.run(cfg, run_dir)
        print(pipeline.summary_line(cfg, result), flush=True)


def main() -> None:
    """``python -m receval [overrides] [-m]``."""
    try:
        _run()
    except SystemExit as stop:
        if stop.code == 1 and not _started:  # Hydra could not compose the config
            sys.stderr.write(
                "receval: error: see Hydra's message above: a config it could not compose "
                "(fix the override or file it names), or a job that failed on a remote launcher\n"
            )
            raise SystemExit(EXIT_USER_ERROR) from None
        raise
