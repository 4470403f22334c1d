"""Export stored runs: one run as TREC files (``receval export RUN_DIR --trec
run.txt``), or runs and sweeps to an experiment tracker (``--to mlflow``).

::

    receval export runs/2026-11-29/10-00-00/3 --trec run.txt --qrels qrels.txt
    trec_eval -m ndcg_cut.10 -m recip_rank qrels.txt run.txt
    receval export runs/2026-11-29 --to mlflow --tracking-uri file:./mlruns --baseline retriever=bm25

- ``--trec FILE``: every question's ``retrieved`` sections, best first, as a TREC
  run (``qid Q0 docid rank score tag``). The scores are the stored ones, except
  that ties (which receval breaks by section id ascending, trec_eval by docid
  descending) are nudged down by the smallest step a double allows, so trec_eval,
  pytrec_eval and ranx rank exactly as receval did (see :mod:`receval.results.trec`).
  Questions that retrieved nothing have no lines.
- ``--qrels FILE``: the stored labels (``relevant`` with their ``grades``) as TREC
  qrels (``qid 0 docid grade``). Questions without labels (unanswerable) have no
  lines, so trec_eval leaves them out, as receval's means do.
- ``--tag NAME``: the run's tag (default ``receval-`` and the first 8 characters
  of the run's config hash).

- ``--to mlflow --tracking-uri URI``: one MLflow parent run per sweep, one child per
  job: the saved config flattened as params (secrets never), every mean with its
  interval bounds, with ``--baseline SELECTOR`` the paired difference on each measure,
  latency and costs as metrics, ``results.parquet`` and ``run.json`` (its secrets
  hidden as the params' are) as artifacts (:mod:`receval.analysis.tracker`,
  :mod:`receval.render.tracker`). ``--experiment`` (default ``receval``), ``--metrics``
  as ``report``'s (default the report's and nDCG@10 and MAP). The URI is the one given
  here, never one found in a stored config, and messages show it without credentials.
  Exporting the same runs again adds nothing but measures not logged before (a new
  ``--metrics``, or a ``--baseline`` where there was none; another baseline is
  refused). A stopped export leaves no half-written run and no stray parent.
  Needs mlflow-skinny (``pip install 'receval[mlflow]'``).

Only stored results are read; files are written atomically, an existing one only
with ``--force``, never inside the run or a dataset folder (:mod:`receval.core.outputs`). Exit status 2 for a
user error (one line), 130 for Ctrl-C.
"""

from __future__ import annotations

import sys
from pathlib import Path

from receval.analysis.tracker import tracked
from receval.cli.options import ArgumentParser
from receval.core import outputs
from receval.core.errors import EXIT_INTERRUPTED, RecevalError, exit_on_error
from receval.core.secrets import split_url
from receval.render.tracker import is_file_store, log, mlflow_modules, uri_shown
from receval.results.discovery import load_runs
from receval.results.external import export
from receval.results.door import open_run

#: Library parameter -> this command's flag, for messages.
FLAGS = {"baseline": "--baseline", "metrics": "--metrics"}


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="receval export",
        description="Write a stored run as a TREC run file (and its labels as TREC qrels), "
        "or log runs and sweeps to MLflow (--to mlflow).",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN",
        help="a run directory (--trec); run, sweep or folders of sweeps (--to mlflow)",
    )
    parser.add_argument("--trec", metavar="FILE", help="the TREC run file to write")
    parser.add_argument("--qrels", metavar="FILE", help="also write the labels as TREC qrels")
    parser.add_argument("--tag", help="the run tag (default receval-<config hash>)")
    outputs.add_force(parser)
    tracker = parser.add_argument_group("to an experiment tracker")
    tracker.add_argument("--to", choices=("mlflow",), help="log the runs to this tracker")
    tracker.add_argument("--tracking-uri", metavar="URI", help="where: file:./mlruns, http://host:5000 (yours to choose)")
    tracker.add_argument("--experiment", default="receval", help="the MLflow experiment (default receval)")
    tracker.add_argument("--baseline", metavar="SELECTOR", help="a run dir or KEY=VALUE: log each run's paired difference")
    tracker.add_argument("--metrics", help="measures, comma-separated (default the report's)")
    return parser


def check_store(uri: str, runs: list[str]) -> None:
    """A file store (``file:./mlruns``) never goes inside a run or sweep being exported,
    nor inside any stored run folder: outputs never go into a run."""
    if not is_file_store(uri):
        return
    store = Path(split_url(uri).path).expanduser().resolve()
    for item in runs:
        inside = Path(item).expanduser().resolve()
        if store == inside or inside in store.parents:
            raise RecevalError(
                f"--tracking-uri {uri_shown(uri)} is inside {item}, which this command reads; put the store elsewhere"
            )
    for folder in [store, *store.parents]:
        if any((folder / marker).exists() for marker in outputs.RUN_MARKERS[:2]):
            raise RecevalError(f"--tracking-uri {uri_shown(uri)} is inside the stored run {folder}; put the store elsewhere")


def to_tracker(args) -> int:
    """``--to mlflow``: the runs' plan (pure) logged to the tracking URI given."""
    if not args.tracking_uri:
        raise RecevalError("--to mlflow needs --tracking-uri URI, e.g. file:./mlruns (a local store)")
    if args.trec or args.qrels or args.tag:
        raise RecevalError("--to mlflow logs runs to a tracker; write TREC files (--trec) in a separate call")
    check_store(args.tracking_uri, args.runs)
    mlflow_modules()  # the extra's message before any run is read
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    sweeps = tracked(load_runs(args.runs), metrics, args.baseline, FLAGS)
    try:
        done = log(sweeps, args.tracking_uri, args.experiment)
    except KeyboardInterrupt:  # the runs of the sweep being written were deleted on the way out
        print("receval: export interrupted; the MLflow runs of the sweep it was writing were removed "
              "(export again to finish)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"receval: {done.line()}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        if args.to:
            return to_tracker(args)
        if not args.trec:
            raise RecevalError("receval export: give --trec FILE (a TREC run) or --to mlflow (see --help)")
        if len(args.runs) != 1:
            raise RecevalError(f"--trec writes one run; give one run directory, not {len(args.runs)}")
        args.run_dir = args.runs[0]
        stored = open_run(args.run_dir, skip=frozenset())
        for flag in ("trec", "qrels"):
            outputs.check_output(
                getattr(args, flag), force=args.force, protected_dirs=[args.run_dir], flag=f"--{flag}"
            )
        written = export(stored, args.trec, args.qrels, args.tag)
        for path in written:
            if path is not None:
                print(f"receval: wrote {path}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
