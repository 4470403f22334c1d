"""Checks made before anything is written, at no extra composition.

- The output folder: :class:`OutputFolder`, a Hydra callback (``hydra.callbacks`` of
  ``conf/config.yaml`` and ``conf/synth.yaml``), reads ``hydra.run.dir`` (or
  ``hydra.sweep.dir`` of a multirun) from the config Hydra composed anyway and
  refuses, in one message (exit 2), a path that is a file, under a file, or in a
  folder this user cannot write, where Hydra would print a traceback.
- Secrets in the composed config: the same callback refuses a URL carrying a key
  (``user:KEY@``, ``?api_key=``) or a key where a variable NAME belongs, written in a
  config file (:func:`receval.trust.config_problems`; the command line was checked
  before Hydra started), before Hydra saves the config in ``.hydra/``.
- Every job of a ``-m`` sweep: receval's sweeper (:mod:`receval.hydra_plugin`)
  gives each composed job config to the command's check before job 0 runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from hydra.experimental.callback import Callback

from receval import trust
from receval.errors import ConfigError, exit_on_error


def unwritable(folder: Path) -> str | None:
    """Why runs cannot be written into ``folder`` (None when they can): the first
    existing path on the way is a file, or a folder this user cannot write."""
    for path in (folder, *folder.parents):
        if not path.exists():
            continue
        if not path.is_dir():
            return f"{path} is a file, not a folder"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable"
        return None
    return None


def check_output_dir(folder: str, key: str) -> None:
    """A ``ConfigError`` naming ``hydra.<key>.dir`` when runs cannot be written there."""
    why = unwritable(Path(folder))
    if why:
        raise ConfigError(
            f"hydra.{key}.dir={folder}: cannot write the {key} there ({why}); "
            f"choose another folder with hydra.{key}.dir=..."
        )


def check_secrets(config) -> None:
    """A ``ConfigError`` for each secret written into the composed config (interpolations
    as written: ``${oc.env:NAME}`` is how a secret should come)."""
    from omegaconf import OmegaConf

    problems = trust.config_problems(OmegaConf.to_container(config, resolve=False))
    if problems:
        raise ConfigError(problems)


class OutputFolder(Callback):
    """Refuses a config holding a secret and an output folder that cannot be written,
    before Hydra makes the folder or saves the config."""

    def on_run_start(self, config, **kwargs) -> None:
        with exit_on_error():
            check_secrets(config)
            check_output_dir(str(config.hydra.run.dir), "run")

    def on_multirun_start(self, config, **kwargs) -> None:
        with exit_on_error():
            check_secrets(config)
            check_output_dir(str(config.hydra.sweep.dir), "sweep")
