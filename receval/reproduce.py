"""Re-run stored runs from their saved configs and check the results are identical.

::

    python -m receval.reproduce runs/2026-11-29/10-00-00/3         # one run
    python -m receval.reproduce runs/2026-11-29/10-00-00           # every run of a sweep
    python -m receval.reproduce RUN --out /tmp/rerun               # keep the new run there

Each run is re-run from ``RUN/.hydra/config.yaml``, which Hydra saved with every
value (so it works after ``conf/`` has changed): that file is read as data (see
:mod:`receval.trust`: no interpolation is evaluated, a config that sends requests or
names code is refused without ``--allow-remote`` / ``--allow-code``), merged onto
receval's config schema (a key this receval no longer knows is an error), and passed to :func:`receval.pipeline.run`. The new
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
import math
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import yaml
from omegaconf import OmegaConf

from receval import config as config_schema
from receval import outputs, pipeline
from receval import runs as runs_mod
from receval import trust
from receval.errors import RecevalError, RunError, exit_on_error
from receval.store import RESULTS, is_timing, read_run

IGNORED = "latency_ms and latency_ms.<stage>"


@dataclass
class Reproduction:
    """A stored run against its re-run."""

    run_dir: str
    out_dir: str | None  # None: the temporary re-run was deleted (identical)
    n_questions: int
    columns: list[str]  # compared columns
    differences: dict[str, list[str]] = field(default_factory=dict)  # id -> columns
    only_stored: list[str] = field(default_factory=list)  # question ids
    only_reproduced: list[str] = field(default_factory=list)
    columns_only_stored: list[str] = field(default_factory=list)
    columns_only_reproduced: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (
            self.differences
            or self.only_stored
            or self.only_reproduced
            or self.columns_only_stored
            or self.columns_only_reproduced
        )

    def to_dict(self) -> dict:
        return {
            "run_dir": self.run_dir,
            "out_dir": self.out_dir,
            "identical": self.identical,
            "n_questions": self.n_questions,
            "columns": self.columns,
            "ignored": IGNORED,
            "differences": [
                {"question_id": q, "columns": cols} for q, cols in self.differences.items()
            ],
            "only_stored": self.only_stored,
            "only_reproduced": self.only_reproduced,
            "columns_only_stored": self.columns_only_stored,
            "columns_only_reproduced": self.columns_only_reproduced,
            "notes": self.notes,
        }

    def lines(self, limit: int = 50) -> list[str]:
        where = f"re-run in {self.out_dir}" if self.out_dir else "re-run deleted"
        if self.identical:
            out = [
                f"{self.run_dir}: identical ({self.n_questions} questions, {len(self.columns)} "
                f"columns compared, timings excepted; {where})"
            ]
        else:
            out = [f"{self.run_dir}: DIFFERS ({where})"]
            if self.columns_only_stored or self.columns_only_reproduced:
                out.append(
                    f"  columns only in the stored run: {', '.join(self.columns_only_stored) or '-'}; "
                    f"only in the re-run: {', '.join(self.columns_only_reproduced) or '-'}"
                )
            for label, ids in (("stored run", self.only_stored), ("re-run", self.only_reproduced)):
                if ids:
                    out.append(f"  {len(ids)} question(s) only in the {label}: {_some(ids)}")
            if self.differences:
                out.append(
                    f"  {len(self.differences)} of {self.n_questions} questions differ:"
                )
                for i, (qid, cols) in enumerate(self.differences.items()):
                    if i == limit:
                        out.append(
                            f"  ... and {len(self.differences) - limit} more (--format json lists all)"
                        )
                        break
                    out.append(f"  {qid}: {', '.join(cols)}")
        out.extend(f"  note: {note}" for note in self.notes)
        return out


def _some(ids: list[str], n: int = 20) -> str:
    return " ".join(ids[:n]) + (f" ... (+{len(ids) - n})" if len(ids) > n else "")


# ----------------------------------------------------------------- config


def saved_config(run_dir: Path, *, allow_remote: bool = False, allow_code: bool = False):
    """The run's saved config as data (nothing resolved, see :mod:`receval.trust`),
    checked for network and code use, merged onto receval's schema."""
    from omegaconf.errors import OmegaConfBaseException

    config_file = (run_dir / runs_mod.HYDRA_DIR / runs_mod.CONFIG_YAML).resolve()
    try:
        data = trust.load_saved_config(run_dir, config_file, runs_mod.read_info(run_dir))
        trust.check_reach(data, config_file if config_file.is_file() else run_dir / runs_mod.RUN_JSON,
                          allow_remote=allow_remote, allow_code=allow_code)
        return OmegaConf.merge(OmegaConf.structured(config_schema.RecevalConfig), OmegaConf.create(data))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or getattr(error, "reason", None) or type(error).__name__
        raise RunError(
            f"{config_file}: not a readable YAML config ({problem}{where}); "
            "fix it, or delete it to re-run from the config saved in run.json"
        ) from None
    except OmegaConfBaseException as error:
        message = str(error).splitlines()[0]
        raise RunError(
            f"{run_dir}: its saved config does not fit this receval ({message})"
        ) from None


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


# ----------------------------------------------------------------- comparing


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare_tables(stored: pa.Table, new: pa.Table) -> dict:
    """Question-by-question differences between two results tables (latency excepted)."""
    old_cols = [c for c in stored.column_names if not is_timing(c)]
    new_cols = [c for c in new.column_names if not is_timing(c)]
    common = [c for c in old_cols if c in new_cols]
    old_ids = stored.column("question_id").to_pylist()
    new_ids = new.column("question_id").to_pylist()
    new_index = {q: i for i, q in enumerate(new_ids)}
    old_set = set(old_ids)
    pairs = [(i, new_index[q]) for i, q in enumerate(old_ids) if q in new_index]
    differences: dict[str, list[str]] = {}
    for column in common:
        if column == "question_id":
            continue
        a = stored.column(column).to_pylist()
        b = new.column(column).to_pylist()
        for i, j in pairs:
            if not _same(a[i], b[j]):
                differences.setdefault(old_ids[i], []).append(column)
    order = {q: i for i, q in enumerate(old_ids)}
    return {
        "columns": common,
        "differences": dict(sorted(differences.items(), key=lambda kv: order[kv[0]])),
        "only_stored": [q for q in old_ids if q not in new_index],
        "only_reproduced": [q for q in new_ids if q not in old_set],
        "columns_only_stored": [c for c in old_cols if c not in new_cols],
        "columns_only_reproduced": [c for c in new_cols if c not in old_cols],
    }


# ----------------------------------------------------------------- re-running


def reproduce(
    run_dir: str | Path, out_dir: str | Path | None = None, *, allow_remote: bool = False, allow_code: bool = False
) -> Reproduction:
    """Re-run one stored run from its saved config and compare the results."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise RunError(f"{run_dir}: no such directory")
    stored = read_run(run_dir)  # refuses a missing, partial or newer-schema run
    cfg = saved_config(run_dir, allow_remote=allow_remote, allow_code=allow_code)
    try:
        config_schema.check(cfg)
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
    (target / runs_mod.HYDRA_DIR).mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, target / runs_mod.HYDRA_DIR / runs_mod.CONFIG_YAML)  # the values used, as data
    try:
        pipeline.run(cfg, target)
        new = read_run(target)
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
    found = runs_mod.find_runs(paths)
    results = []
    for i, run_dir in enumerate(found):
        target = None
        if out is not None:
            target = Path(out) if len(found) == 1 else Path(out) / str(i)
        results.append(reproduce(run_dir, target, **allow))
    return results


def build_parser() -> runs_mod.ArgumentParser:
    parser = runs_mod.ArgumentParser(
        prog="python -m receval.reproduce",
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
                print("\n".join(result.lines()))
            if len(results) > 1:
                same = sum(r.identical for r in results)
                print(f"{same} of {len(results)} runs identical")
        sys.stdout.flush()
        return 0 if all(r.identical for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
