"""What ``receval select`` writes for its choice: ``best.yaml`` (the plot is
:mod:`receval.render.choice_plot`).

``best.yaml`` is the chosen run's complete saved config as a primary Hydra config: a
defaults list naming receval's schema and each group's option schema (so a misspelt
key is still an error; :func:`receval.core.groups.primary_defaults`) and a
``hydra.run.dir``. The config is the one ``reproduce`` would re-run
(:func:`receval.results.configs.runnable_config`): read as data, every interpolation
replaced by the value the run saved or refused, and a config that sends requests or
names code refused unless ``select`` is given ``--allow-remote`` / ``--allow-code``
(which then names every host and variable it will send). So the file holds no
interpolation of the run's (its own ``hydra.run.dir`` names the time and process), and
re-running it sends nothing the user did not allow. Run it with::

    receval -cp "$(pwd)" -cn best            # best.yaml in the current folder

``-cp`` must be absolute and name the folder holding the file; ``-cn`` is the file
name without ``.yaml``. On the same data it reproduces the chosen run's results
exactly (every column but the timings); any override still works
(``... hydra.run.dir=runs/best``). Its relative paths (``dataset.path``, ``dataset.questions``,
``tokenizer.subword``, a component's model folder) are made absolute against the folder
the run read them from (``run.json``'s ``workdir``; for a run written before that was
stored, the folder ``select`` runs in, with a warning), so the file runs from any folder
(:func:`receval.results.configs.anchor_paths`); a dataset path that is not there any more
is warned about. Where the re-run writes is never the stored run's to choose: its
``cache_dir`` is this receval's own (:data:`receval.results.identity.PLACE_KEYS`), and the
run's ``hydra.run.dir`` stays relative, so the re-run is written under the folder it is
started from.
"""

from __future__ import annotations

import io
import os
import shlex
from pathlib import Path

import yaml

from receval.core.errors import RecevalError
from receval.core.groups import primary_defaults
from receval.core.progress import warn
from receval.results.configs import anchor_paths, runnable_config, workdir_of
from receval.results.stored import Run
from receval.core.io import atomic_write

RUN_DIR = "runs/best/${now:%Y-%m-%d}/${now:%H-%M-%S-%f}-${receval_pid:}"


def best_config(run: Run, *, allow_remote: bool = False, allow_code: bool = False, fallback=None) -> dict:
    """The chosen run's config as ``best.yaml`` holds it: :func:`runnable_config` (the
    trust check ``reproduce`` makes; ``fallback``: the run side's
    :func:`receval.run.written.own_default`), without a ``defaults`` list of its own."""
    data = runnable_config(run.run_dir, allow_remote=allow_remote, allow_code=allow_code, fallback=fallback)
    data.pop("defaults", None)
    base, known = paths_base(run)
    data, changed = anchor_paths(data, base)
    if changed and not known:
        warn(f"{run.run_dir} does not say which folder it was run in (written before run.json kept its "
             f"workdir): its relative paths ({', '.join(changed)}) are taken from the current folder {base}; "
             "run select from the folder the run was made in")
    dataset = data.get("dataset") if isinstance(data.get("dataset"), dict) else {}
    for key in ("path", "questions"):
        value = dataset.get(key)
        if isinstance(value, str) and value != "???" and not Path(value).exists():
            warn(f"best.yaml's dataset.{key}={value} does not exist now: the re-run will stop there")
    return data


def paths_base(run: Run) -> tuple[Path, bool]:
    """The folder a run's relative paths are read from, and whether the run said so (its
    ``workdir``); else the current folder."""
    base = workdir_of(run.info)
    return (base, True) if base is not None else (Path.cwd(), False)


def best_yaml(run: Run, out: Path, why: str, config: dict) -> str:
    """The text of ``best.yaml`` for ``run`` and its :func:`best_config` (see the module docstring)."""
    name = out.stem
    header = [
        f"# Chosen by receval select: {run.run_dir}",
        f"# {why}",
        f"# Relative paths made absolute, as the run read them from {paths_base(run)[0]}",
        "# Re-run it (same results on the same data, timings aside):",
        f'#   receval -cp "$(pwd)" -cn {name}     # from the folder holding {out.name}',
        f"#   {rerun_command(out)}     # from any folder",
        "",
    ]
    body = {
        "defaults": primary_defaults(config),  # each group typed by its option's schema
        **config,
        "hydra": {"job": {"chdir": False}, "run": {"dir": RUN_DIR}},
    }
    stream = io.StringIO()
    yaml.safe_dump(body, stream, sort_keys=False, default_flow_style=None, allow_unicode=True)
    return "\n".join(header) + stream.getvalue()


def rerun_command(out: Path) -> str:
    """The command re-running ``best.yaml`` from any folder: ``-cp`` its absolute folder."""
    folder = os.path.abspath(out.parent)
    return f"receval -cp {shlex.quote(folder)} -cn {shlex.quote(out.stem)}"


def check_out(out: str | Path) -> Path:
    """``--out`` must be a ``.yaml`` file: Hydra finds it by ``-cn NAME`` as NAME.yaml."""
    out = Path(out)
    if out.suffix != ".yaml":
        raise RecevalError(f"--out {out}: name a .yaml file, e.g. best.yaml (Hydra reads -cn best as best.yaml)")
    return out


def write_best(run: Run, out: str | Path, why: str, config: dict) -> Path:
    out = check_out(out)
    text = best_yaml(run, out, why, config)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return out

