"""The thin Hydra shell of ``python -m receval.synth``: compose ``conf/synth.yaml``,
call :func:`receval.synth.generate`.

Exit status 0 when the job ran to the end (units that failed are listed on stderr
and in the summary; a rerun retries them), 2 for every user error: a bad config
value, a wrong key, URL or model, an unreachable server, too many failures in a row,
and a config Hydra cannot compose.
"""

from __future__ import annotations

import sys

import hydra

from receval import config as config_schema
from receval import synth
from receval.errors import EXIT_USER_ERROR, exit_on_error

config_schema.register_synth()
_started = False


@hydra.main(version_base="1.3", config_path=config_schema.config_dir(), config_name="synth")
def _synth(cfg) -> None:
    global _started
    _started = True
    with exit_on_error():
        summary = synth.generate(cfg)
        print(synth.summary_line(summary), flush=True)


def main() -> None:
    """``python -m receval.synth [overrides]``."""
    try:
        _synth()
    except SystemExit as stop:
        if stop.code == 1 and not _started:  # Hydra could not compose the config
            sys.stderr.write("receval: error: the config above could not be composed; fix the override or file it names\n")
            raise SystemExit(EXIT_USER_ERROR) from None
        raise
