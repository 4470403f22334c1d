"""Check every job of a sweep before the first one starts.

Hydra composes and checks a multirun's jobs one at a time as it launches them, so
``chunking.max_words=20,0,40 -m`` runs job 0 and then fails on job 1. Here the
sweep is expanded the way Hydra's basic sweeper does it (its override parser and
``BasicSweeper.split_arguments``), each job's config is composed and given to the
entry point's check function, and every bad value is refused at once (exit 2)
before anything runs or is written.

The output folder (``hydra.run.dir``, or ``hydra.sweep.dir`` of a multirun) is
checked the same way: a path that is a file, or under one, or in a folder that
cannot be written, is one message, where Hydra would print a traceback.

Anything this preflight cannot expand or compose (another sweeper's syntax, a
misspelt key, a custom config path) is left to Hydra, which reports it itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from receval.errors import ConfigError


def check_command(
    config_dir: str, config_name: str, argv: Sequence[str], check: Callable[[object], None] | None = None
) -> None:
    """Everything checked before Hydra starts: the output folder, then (with
    ``check``) every job of a multirun."""
    check_output_dir(config_dir, config_name, argv)
    if check is not None:
        check_sweep(config_dir, config_name, argv, check)


def _command_line(argv: Sequence[str], multirun: bool = True):
    """Hydra's own reading of ``argv``, or None when this is not a plain multirun
    (with ``multirun=False``: a plain run or multirun)."""
    from hydra._internal.utils import get_args_parser

    try:
        args, _ = get_args_parser().parse_known_args(list(argv))
    except SystemExit:  # a usage error: Hydra reports it
        return None
    if (multirun and not args.multirun) or args.help or args.hydra_help or args.cfg or args.info:
        return None
    if args.shell_completion or args.run or args.config_path or args.config_name or args.config_dir:
        return None
    return args


def job_overrides(config_dir: str, overrides: Sequence[str]) -> list[list[str]] | None:
    """The override list of each job a multirun with ``overrides`` launches, in job
    order; None when Hydra's basic sweeper could not expand them."""
    from hydra import initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
            loader = GlobalHydra.instance().config_loader()
            parsed = OverridesParser.create(config_loader=loader).parse_overrides(list(overrides))
            (jobs,) = BasicSweeper.split_arguments(parsed, None)
    except Exception:  # noqa: BLE001 -- not ours to report: Hydra says what is wrong
        return None
    return jobs


def check_sweep(
    config_dir: str, config_name: str, argv: Sequence[str], check: Callable[[object], None]
) -> None:
    """Raise one ``ConfigError`` listing every bad value of a multirun's jobs
    (``check(cfg)`` raising ``ConfigError``), each with the jobs it stops."""
    args = _command_line(argv)
    if args is None:
        return
    if any(o.split("=", 1)[0].lstrip("+~") == "hydra/sweeper" for o in args.overrides):
        return  # another sweeper (Optuna) picks its own trials: not a product of lists
    jobs = job_overrides(config_dir, args.overrides)
    if not jobs or len(jobs) < 2:
        return  # one job: Hydra's own run of it checks it before any work
    from hydra import compose, initialize_config_dir

    swept = {o.split("=", 1)[0] for o in args.overrides if "," in o or "(" in o}
    problems: dict[str, list[str]] = {}
    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        for number, job in enumerate(jobs):
            try:
                cfg = compose(config_name, overrides=job)
            except Exception:  # noqa: BLE001 -- a compose error: Hydra reports it in its run
                return
            try:
                check(cfg)
            except ConfigError as error:
                label = " ".join(o for o in job if o.split("=", 1)[0] in swept) or " ".join(job)
                for problem in error.problems:
                    problems.setdefault(problem, []).append(f"{number} ({label})")
    if problems:
        raise ConfigError(
            f"{problem} [sweep job {', '.join(where)}]; nothing was run" for problem, where in problems.items()
        )


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


def check_output_dir(config_dir: str, config_name: str, argv: Sequence[str]) -> None:
    """A ``ConfigError`` naming ``hydra.run.dir`` (``hydra.sweep.dir`` for a
    multirun) when runs cannot be written there."""
    args = _command_line(argv, multirun=False)
    if args is None:
        return
    overrides = list(args.overrides)
    if args.multirun:
        jobs = job_overrides(config_dir, overrides)
        if not jobs:
            return
        overrides = jobs[0]
    key = "sweep" if args.multirun else "run"
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
            cfg = compose(config_name, overrides=overrides, return_hydra_config=True)
            folder = str(cfg.hydra[key].dir)
    except Exception:  # noqa: BLE001 -- Hydra reports what it cannot compose
        return
    why = unwritable(Path(folder))
    if why:
        raise ConfigError(
            f"hydra.{key}.dir={folder}: cannot write the {key} there ({why}); "
            f"choose another folder with hydra.{key}.dir=..."
        )
