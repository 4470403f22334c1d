"""Export a stored run as TREC files: ``python -m receval.export RUN_DIR --trec run.txt``.

::

    python -m receval.export runs/2026-11-29/10-00-00 --trec run.txt --qrels qrels.txt
    trec_eval -m ndcg_cut.10 -m recip_rank qrels.txt run.txt

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

Only stored results are read; files are written atomically, an existing one only
with ``--force``, never inside the run or a dataset folder (:mod:`receval.core.outputs`). Exit status 2 for a
user error (one line).
"""

from __future__ import annotations

import sys

from receval.cli.options import ArgumentParser
from receval.core import outputs
from receval.core.errors import exit_on_error
from receval.results.external import export
from receval.results.stored import read_run


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="python -m receval.export",
        description="Write a stored run as a TREC run file (and its labels as TREC qrels).",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (holding results.parquet)")
    parser.add_argument("--trec", required=True, metavar="FILE", help="the TREC run file to write")
    parser.add_argument("--qrels", metavar="FILE", help="also write the labels as TREC qrels")
    parser.add_argument("--tag", help="the run tag (default receval-<config hash>)")
    outputs.add_force(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        stored = read_run(args.run_dir)
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
