"""Re-run stored runs from their saved configs and check the results are identical.

::

    receval reproduce runs/2026-11-29/10-00-00/3         # one run
    receval reproduce runs/2026-11-29/10-00-00           # every run of a sweep
    receval reproduce RUN --out /tmp/rerun               # keep the new run there

Each run is re-run from ``RUN/.hydra/config.yaml``, which Hydra saved with every
value (so it works after ``conf/`` has changed): that file is read as data
(:func:`receval.results.configs.runnable_config`, the path ``select --out`` takes too,
under the rules of :mod:`receval.core.trust`: no interpolation is evaluated, whatever its
key; one is replaced by the value run.json saved at the same place, a setting that
does not change results such as ``cache_dir`` by receval's own default, or refused; a
config that sends requests or names code is refused without ``--allow-remote`` /
``--allow-code``, which print every host and variable it will send), merged onto
receval's config schema (a key this receval no longer knows is an error), and passed to :func:`receval.run.pipeline.run`. The new
``results.parquet`` is compared with the stored one question by question: ids,
retrieved sections and scores, first relevant rank and every measure -- all
columns but the timings (``latency_ms``, ``latency_ms.<stage>``), exactly. Exit status 0 when every run is identical;
1 listing each differing question and its columns; 2 for a user error (no such
run, a results file of a newer schema, a saved ``dataset.path`` that no longer
exists, ...).

Where the new run goes: ``--out DIR`` (one run: DIR itself; several: DIR/0, DIR/1,
...; never a directory already holding a run). Without ``--out`` it goes to a
fresh temporary directory, deleted when the run is identical and kept (its path
printed) when it differs, so nothing is written beside the stored runs.

A saved ``dataset.path`` (or ``dataset.questions``) may be null -- the built-in
pages -- or relative: a relative path is resolved against the current directory,
as the original run did; run reproduce from the directory the run was made in.

There is deliberately no plain-Hydra recipe (``-cp RUN/.hydra -cn config``): Hydra
would obey whatever ``hydra:`` node (callbacks, launchers) an edited config holds.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from receval.run.spec import run_spec
from receval.run import pipeline
from receval.core import outputs
from receval.core.errors import RecevalError, RunError, exit_on_error
from receval.cli.options import ArgumentParser
from receval.results.claim import taken
from receval.run.written import saved_config
from receval.results.discovery import load_runs
from receval.analysis.reproduction import Reproduction, compare_tables
from receval.results.door import open_run
from receval.results.format import CONFIG_PATH, RESULTS
from receval.render import reproduce as rendered

__all__ = ["Reproduction", "compare_tables", "main", "reproduce", "reproduce_all", "saved_config"]


def _check_dataset_paths(cfg, run_dir: Path) -> None:
    for key in ("path", "questions"):
        value = cfg.dataset.get(key)
        if value in (None, "???"):
            continue
        path = Path(value)
        if path.is_absolute():
            if not path.exists():
                raise RunError(
                    f"{run_dir}: saved dataset.{key}={value} does not exist any more"
                )
        elif not (Path.cwd() / path).exists():
            raise RunError(
                f"{run_dir}: saved dataset.{key}={value} is relative and does not exist "
                f"under the current directory {Path.cwd()}; run reproduce from the "
                "directory the run was made in"
            )


# ----------------------------------------------------------------- re-running


def reproduce(
    run_dir: str | Path, out_dir: str | Path | None = None, *, allow_remote: bool = False, allow_code: bool = False
) -> Reproduction:
    """Re-run one stored run from its saved config and compare the results."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise RunError(f"{run_dir}: no such directory")
    stored = open_run(run_dir, skip=frozenset())  # refuses a missing, incomplete, partial or newer-schema run
    cfg = saved_config(run_dir, allow_remote=allow_remote, allow_code=allow_code)
    try:
        spec = run_spec(cfg)  # validated once; the run below reuses it
    except RecevalError as error:
        raise RunError(
            [f"{run_dir}: its saved config is not valid in this receval: {p}" for p in error.problems]
        ) from None
    _check_dataset_paths(cfg, run_dir)

    temporary = out_dir is None
    if temporary:
        target = Path(tempfile.mkdtemp(prefix="receval-reproduce-"))
    else:
        target = Path(out_dir)
        if (target / RESULTS).exists():
            raise RunError(f"--out {target}: already holds a run; choose a new directory")
        outputs.check_output(target / RESULTS, protected_dirs=[run_dir], flag="--out")  # never into a run
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunError(
                f"--out {target}: cannot create it ({error.strerror}); choose a folder you can write to"
            ) from None
    try:
        with taken(target) as claim:  # the values used, as data, saved with the new run's id
            pipeline.run(spec, target, claim=claim.start({CONFIG_PATH: OmegaConf.to_yaml(cfg)}))
        new = open_run(target, skip=frozenset())
    except BaseException:
        if temporary:
            shutil.rmtree(target, ignore_errors=True)
        raise

    found = compare_tables(stored.table, new.table)
    result = Reproduction(
        run_dir=str(run_dir),
        out_dir=str(target),
        n_questions=stored.table.num_rows,
        **found,
    )
    old_meta, new_meta = stored.metadata, new.metadata
    if old_meta.get("dataset_fingerprint") != new_meta.get("dataset_fingerprint"):
        result.notes.append("the dataset files differ from the run's (fingerprint changed)")
    if old_meta.get("receval_version") != new_meta.get("receval_version"):
        result.notes.append(
            f"run written by receval {old_meta.get('receval_version')}, re-run with "
            f"{new_meta.get('receval_version')}"
        )
    if old_meta.get("config_hash") != new_meta.get("config_hash"):
        result.notes.append(
            "config hash differs: this receval's schema fills in settings the run did not have"
        )
    if temporary and result.identical:
        shutil.rmtree(target, ignore_errors=True)
        result.out_dir = None
    return result


def reproduce_all(paths: list[str | Path], out: str | Path | None = None, **allow) -> list[Reproduction]:
    found = [run.run_dir for run in load_runs(paths, headers=True)]
    results = []
    for i, run_dir in enumerate(found):
        target = None
        if out is not None:
            target = Path(out) if len(found) == 1 else Path(out) / str(i)
        results.append(reproduce(run_dir, target, **allow))
    return results


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="receval reproduce",
        description="Re-run stored runs from their saved configs; check the results are identical.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories or sweep directories")
    parser.add_argument(
        "--out", metavar="DIR",
        help="keep the re-run(s) here (default: a temporary directory, deleted when identical)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--allow-remote", action="store_true",
        help="re-run a run whose config sends requests (an http backend, a base_url): trust it",
    )
    parser.add_argument(
        "--allow-code", action="store_true", help="re-run a run whose config names code to import (target)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        results = reproduce_all(
            args.runs, args.out, allow_remote=args.allow_remote, allow_code=args.allow_code
        )
        if args.format == "json":
            data = {
                "identical": all(r.identical for r in results),
                "runs": [r.to_dict() for r in results],
            }
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            for result in results:
                print("\n".join(rendered.lines(result)))
            if len(results) > 1:
                same = sum(r.identical for r in results)
                print(f"{same} of {len(results)} runs identical")
        sys.stdout.flush()
        return 0 if all(r.identical for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
