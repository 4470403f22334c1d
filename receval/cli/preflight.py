"""Checks made before anything is written, at no extra composition.

- The output folder: :class:`OutputFolder`, a Hydra callback (``hydra.callbacks`` of
  ``conf/config.yaml`` and ``conf/synth.yaml``), reads ``hydra.run.dir`` (or
  ``hydra.sweep.dir`` of a multirun) from the config Hydra composed anyway and
  refuses, in one message (exit 2), a path that is a file, under a file, or in a
  folder this user cannot write, where Hydra would print a traceback.
- Secrets in the composed config: a URL carrying a key (``user:KEY@``, ``?api_key=``),
  a key where a variable NAME belongs, a key-like value anywhere
  (:func:`receval.core.trust.config_problems`; the command line was checked before Hydra
  started), refused before Hydra saves the config in ``.hydra/``: in the job's own part
  by its run spec (:mod:`receval.run.spec`, the check below), in Hydra's node (and in the
  whole config of a command whose check is not the run spec's) by this callback.
- Every job of a ``-m`` sweep: receval's sweeper (:mod:`receval.hydra_plugin`)
  gives each composed job config to the command's check before job 0 runs.
- A single run: :class:`ConfigCheck`, a Hydra callback, gives the composed config
  to the command's check before Hydra makes the run folder (and its ``.hydra/``):
  a misspelt key, a number out of range or an unknown ``cost.<stage>`` leaves nothing.
- An override naming no key (``chunking.max_word=20``): :func:`unknown_overrides_named`
  makes Hydra's loader refuse it with the keys that exist ("did you mean"), where
  Hydra would suggest force-adding it (``+chunking.max_word=20``), which runs
  with the key ignored.
- One sweep per sweep folder (:func:`claim_sweep_dir`): the first sweep into a folder
  leaves ``.receval-sweep.json`` there, created atomically and holding the sweep's
  identity (:func:`sweep_identity`: the primary config's name, the command line's
  overrides, the sweep parameters of the config); a different sweep into that folder is
  refused before it runs a job (two sweeps started together once mixed one job's
  ``.hydra`` with the other's results), the same sweep again resumes. receval's
  sweeper claims the folder once every job is checked; another sweeper (Optuna), when
  the multirun starts (:class:`OutputFolder`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, open_dict, read_write

from receval.core import trust
from receval.run.config import SWEEPER
from receval.core.errors import ConfigError, exit_on_error
from receval.schema import unknown_key


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


def check_secrets(config, jobs_checked: bool = False) -> None:
    """A ``ConfigError`` for each secret written into the composed config (interpolations
    as written: ``${oc.env:NAME}`` is how a secret should come). ``jobs_checked``: the
    job's part is checked by its run spec (:mod:`receval.run.spec`, the command's check, run
    before anything is written), so only Hydra's own node is checked here."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(config, resolve=False)
    if jobs_checked and isinstance(data, dict):
        data = {"hydra": data.get("hydra")}
    problems = trust.config_problems(data)
    if problems:
        raise ConfigError(problems)


SWEEP_MARKER = ".receval-sweep.json"
MULTIRUN = "multirun.yaml"  # what Hydra saves of a sweep
MAX_MARKER_BYTES = 1 << 20
RECEVAL_SWEEPER = SWEEPER["_target_"]


def sweep_identity(config) -> dict:
    """What makes two sweeps the same sweep (so one folder may hold it, and resume it):
    the primary config, the command line's overrides in order, the sweep parameters a
    config sets (``hydra.sweeper.params``); plain JSON data."""
    from omegaconf import OmegaConf

    params = OmegaConf.select(config, "hydra.sweeper.params", default=None)
    identity = {
        "config_name": OmegaConf.select(config, "hydra.job.config_name", default=None),
        "overrides": list(OmegaConf.select(config, "hydra.overrides.task", default=None) or []),
        "params": OmegaConf.to_container(params, resolve=False) if params is not None else None,
    }
    return json.loads(json.dumps(identity, default=str))


def _earlier_sweep(sweep_dir: Path) -> dict | None:
    """The identity of a sweep made here before folders were claimed (its ``multirun.yaml``,
    None when there is none or it names no sweep). It is read as the door reads a stored
    config (:func:`receval.results.door.read_yaml`: contained, bounded, nothing evaluated),
    so an alias bomb or a link out of the folder is one message (a RunError), at once."""
    path = sweep_dir / MULTIRUN
    if not path.is_symlink() and not path.exists():
        return None
    from omegaconf import OmegaConf

    from receval.results.door import contained, read_yaml  # pyarrow: only when there is one to read

    fix = f"choose another folder with hydra.sweep.dir=..., or remove {MULTIRUN} from this one (nothing was run)"
    saved = read_yaml(contained(sweep_dir, MULTIRUN), fix)
    try:
        return sweep_identity(OmegaConf.create({"hydra": saved["hydra"]}))
    except Exception:  # noqa: BLE001 - not a sweep's config: nothing to compare with
        return None


def _claimed_by(marker: Path) -> dict | None:
    """The identity a sweep folder's marker holds (None when it is not readable); a marker
    is a few hundred bytes, so a larger file is not one."""
    try:
        if marker.stat().st_size > MAX_MARKER_BYTES:
            return None
        held = json.loads(marker.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return held if isinstance(held, dict) else None


def _refuse(sweep_dir: Path, held: dict | None, identity: dict) -> ConfigError:
    def command(found: dict | None) -> str:
        if not found:
            return "unknown: its marker is not readable"
        return " ".join(map(str, found.get("overrides") or [])) or "no overrides"

    return ConfigError(
        f"hydra.sweep.dir={sweep_dir} holds another sweep ({command(held)}); this one "
        f"({command(identity)}) would mix its jobs' files with that one's: choose another folder "
        "with hydra.sweep.dir=..., or run that sweep's own command again to resume it (nothing was run)"
    )


def claim_sweep_dir(sweep_dir: str | Path, identity: dict) -> None:
    """Make ``sweep_dir`` this sweep's, or refuse it (a ``ConfigError``) when it holds
    another sweep. The marker is written to a temporary file and hard-linked into place
    (atomic: of two sweeps started together exactly one creates it, and the other reads
    the whole identity); the same sweep again (resume) finds its own identity there."""
    sweep_dir = Path(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    marker = sweep_dir / SWEEP_MARKER
    if not marker.exists():
        earlier = _earlier_sweep(sweep_dir)
        if earlier is not None and earlier != identity:
            raise _refuse(sweep_dir, earlier, identity)
        fd, tmp = tempfile.mkstemp(prefix=".receval-sweep.", suffix=".tmp", dir=sweep_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(identity, indent=2) + "\n")
            try:
                os.link(tmp, marker)
            except FileExistsError:
                pass  # another sweep got there first: compared below
            except OSError:  # a filesystem without hard links: exclusive create
                try:
                    with open(marker, "x", encoding="utf-8") as out:
                        out.write(json.dumps(identity, indent=2) + "\n")
                except FileExistsError:
                    pass
        finally:
            Path(tmp).unlink(missing_ok=True)
    held = _claimed_by(marker)
    if held != identity:
        raise _refuse(sweep_dir, held, identity)


class OutputFolder(Callback):
    """Refuses a config holding a secret and an output folder that cannot be written,
    before Hydra makes the folder or saves the config."""

    def on_run_start(self, config, **kwargs) -> None:
        with exit_on_error():
            check_secrets(config, jobs_checked=checks_spec(config))
            check_output_dir(str(config.hydra.run.dir), "run")

    def on_multirun_start(self, config, **kwargs) -> None:
        from omegaconf import OmegaConf

        receval_sweeper = OmegaConf.select(config, "hydra.sweeper._target_", default=None) == RECEVAL_SWEEPER
        with exit_on_error():
            check_secrets(config, jobs_checked=receval_sweeper and checks_spec(config))
            check_output_dir(str(config.hydra.sweep.dir), "sweep")
            if not receval_sweeper:
                claim_sweep_dir(config.hydra.sweep.dir, sweep_identity(config))  # receval's: once checked


class ConfigCheck(Callback):
    """Gives a single run's composed config to the command's check before Hydra makes
    the run folder. The check is named in the callback's own config
    (``hydra.callbacks.config_check.check_target``: ``receval.run.pipeline.check_config`` in
    ``conf/config.yaml``, the synth check in ``conf/synth.yaml``); receval's sweeper reads
    the same value (:func:`check_named`), so one setting serves single runs and sweeps."""

    def __init__(self, check_target: str | None = None) -> None:
        self.check = resolve_check(check_target)

    def on_run_start(self, config, **kwargs) -> None:
        if self.check is None:
            return
        with exit_on_error():
            self.check(job_view(config))


CHECK_KEY = "hydra.callbacks.config_check.check_target"


def resolve_check(target: str | None) -> Callable[[object], None] | None:
    """The function a dotted name (``package.module.function``) names; None for none."""
    if not target:
        return None
    from hydra.utils import get_method

    return get_method(target)


SPEC_CHECK = "receval.run.pipeline.check_config"  # builds the run spec, whose checks include secrets


def checks_spec(config) -> bool:
    """Whether the check ``config`` names for its jobs is the run spec's (which refuses
    secrets in the job's config itself, so the callback checks only Hydra's node)."""
    from omegaconf import OmegaConf

    return OmegaConf.select(config, CHECK_KEY, default=None) == SPEC_CHECK


def check_named(config) -> Callable[[object], None] | None:
    """The check a composed config names for its jobs (:data:`CHECK_KEY`), or None."""
    from omegaconf import OmegaConf

    return resolve_check(OmegaConf.select(config, CHECK_KEY, default=None))


def job_view(config) -> DictConfig:
    """The config a job's task sees: ``config`` without its ``hydra`` node (as Hydra's run_job makes it)."""
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return task


def unknown_override(cfg: DictConfig, dotted: str) -> str | None:
    """The message for an override of ``dotted``, a key ``cfg`` does not have: the first
    missing part, with the keys its parent has; None when a part is not a mapping's key."""
    node, parts = cfg, dotted.split(".")
    for i, part in enumerate(parts):
        parent = ".".join(parts[:i])
        empty = node._is_none() or (isinstance(node, DictConfig) and not list(node.keys()))
        if empty and parent:  # e.g. rerank.first_size with rerank: none (Hydra's failed update leaves {})
            return f"{dotted}: {parent} is null in this config, so it has no keys; choose one first ({parent}=<option>)"
        if isinstance(node, DictConfig):
            if part not in node:
                valid = [str(k) for k in node.keys() if parent or k != "hydra"]
                kind = node.get("kind") if "kind" in node else None
                return unknown_key(parent, part, valid, f"{parent} ({kind})" if parent and kind else "")
            node = node._get_node(part)
        elif isinstance(node, ListConfig) and part.isdigit() and int(part) < len(node):
            node = node._get_node(int(part))
        else:
            return None
    return None


@contextlib.contextmanager
def unknown_overrides_named() -> Iterator[None]:
    """While a command runs, Hydra's config loader refuses an override of a key that does
    not exist with :func:`unknown_override`'s message (exit 2), instead of its hint to
    force-add it; other overrides fail as Hydra says. Undone afterwards, so code composing
    configs in the same process (tests, notebooks) sees Hydra's own errors."""
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    from receval.run.hydra_internals import applying_overrides_with

    def make(hydra_apply):
        return lambda overrides, cfg: apply(hydra_apply, overrides, cfg)

    def apply(hydra_apply, overrides, cfg) -> None:
        for override in overrides:  # one at a time, in order, as Hydra applies them
            try:
                hydra_apply([override], cfg)
            except (ConfigCompositionException, AssertionError) as error:
                # a key under a null typed group (rerank.first_size with rerank: none): OmegaConf's
                # update asserts on the None node, unwrapped
                plain = not (override.is_add() or override.is_force_add() or override.is_delete())
                unknown = isinstance(error, AssertionError) or isinstance(
                    error.__cause__, (ConfigAttributeError, ConfigKeyError)
                )
                if plain and unknown:
                    problem = unknown_override(cfg, override.key_or_group)
                    if problem:
                        with exit_on_error():
                            raise ConfigError(problem) from None
                raise

    with applying_overrides_with(make):
        yield
