"""What ``python -m receval.select`` writes for its choice: ``best.yaml`` (the plot is
:mod:`receval.tables.choice_plot`).

``best.yaml`` is the chosen run's complete saved config (``.hydra/config.yaml``, else
``run.json``'s copy) as a primary Hydra config: a defaults list naming receval's
schema (so a misspelt key is still an error) and a ``hydra.run.dir``. Run it with::

    python -m receval -cp "$(pwd)" -cn best            # best.yaml in the current folder

``-cp`` must be absolute and name the folder holding the file; ``-cn`` is the file
name without ``.yaml``. On the same data it reproduces the chosen run's results
exactly (every column but the timings); any override still works
(``... hydra.run.dir=runs/best``). A relative ``dataset.path`` is read from the
current directory, as the original run read it.
"""

from __future__ import annotations

import io
from pathlib import Path

import yaml

from receval.errors import RecevalError, RunError
from receval.results.configs import CONFIG_YAML, HYDRA_DIR
from receval.results.stored import Run
from receval.store import atomic_write

RUN_DIR = "runs/best/${now:%Y-%m-%d}/${now:%H-%M-%S-%f}-${receval_pid:}"


def saved_config_text(run: Run) -> dict:
    """The run's config exactly as saved: interpolations such as ``${oc.env:...}`` kept."""
    path = run.run_dir / HYDRA_DIR / CONFIG_YAML
    if path.is_file():
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise RunError(f"{path}: cannot be read ({error}); re-run the chosen config") from None
    else:
        data = run.info.get("config")
    if not isinstance(data, dict) or not data:
        raise RunError(f"{run.run_dir}: no saved config (.hydra/config.yaml or run.json); cannot write it")
    data = dict(data)
    data.pop("hydra", None)
    data.pop("defaults", None)
    return data


def best_yaml(run: Run, out: Path, why: str) -> str:
    """The text of ``best.yaml`` for ``run`` (see the module docstring)."""
    name = out.stem
    header = [
        f"# Chosen by receval.select: {run.run_dir}",
        f"# {why}",
        "# Re-run it (same results on the same data, timings aside):",
        f'#   python -m receval -cp "$(pwd)" -cn {name}     # from the folder holding {out.name}',
        "",
    ]
    body = {
        "defaults": ["receval_schema", "_self_"],
        **saved_config_text(run),
        "hydra": {"job": {"chdir": False}, "run": {"dir": RUN_DIR}},
    }
    stream = io.StringIO()
    yaml.safe_dump(body, stream, sort_keys=False, default_flow_style=None, allow_unicode=True)
    return "\n".join(header) + stream.getvalue()


def check_out(out: str | Path) -> Path:
    """``--out`` must be a ``.yaml`` file: Hydra finds it by ``-cn NAME`` as NAME.yaml."""
    out = Path(out)
    if out.suffix != ".yaml":
        raise RecevalError(f"--out {out}: name a .yaml file, e.g. best.yaml (Hydra reads -cn best as best.yaml)")
    return out


def write_best(run: Run, out: str | Path, why: str) -> Path:
    out = check_out(out)
    text = best_yaml(run, out, why)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return out
