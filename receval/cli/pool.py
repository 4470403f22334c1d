"""Pool what stored runs retrieved and no label covers: ``receval pool``.

::

    receval pool RUNS... --depth 10 --out pool.jsonl [--calibrate 50] [--seed 0]
    receval pool RUNS... --budget 3000 [--depth 100] [--measures ap,ndcg@10] --out pool.jsonl

One JSON line per (question, unit) in the top ``--depth`` of any run given that carries
no label: ``question_id``, ``question``, ``id``, ``text`` (the unit's text, read from the
dataset the first run's saved config names), ``n_runs`` (runs that retrieved it) and
``best_rank``, ``role`` ``hole``; an id no unit of the dataset has (a trace's document,
:mod:`receval.traces`) takes the text the run stored for it. ``--calibrate N`` adds N labelled pairs (seeded), role
``calibration`` with ``known_grade``, for the judge's agreement with known labels; each
labelled unit follows as role ``reference`` (not judged; the one-shot judge's yardstick),
and each run pooled as role ``run`` (its LLM stages, for the judge's circularity note).
A depth-d pool decides hit@k and precision@k for k <= d for the runs pooled; recall, ap,
ndcg and rprec count the relevant units below d too, which it leaves unlabelled.

``--budget N`` draws at most N holes from the top ``--depth`` (default: everything the
runs retrieved) by a stratified design with known inclusion probabilities, serving the
``--measures`` named (default ``ap,ndcg@10``; :mod:`receval.stats.sampling`): each hole
line records its ``inclusion`` probability, ``stratum`` and the number ``drawn`` from
it; ``receval judge`` carries them into the labels and ``report --labels`` estimates the
measures from the sample, with intervals.

``--for-humans N --stratify judge --judged JUDGE.jsonl`` instead draws N of a judge's
labelled pairs for a person, stratified by the judge's grade with Neyman's allocation
from the spread its agreement file shows (:mod:`receval.analysis.humans`); the person's
labels of them (``receval judge judge=qrels judge.path=PERSON.jsonl``) go to ``report
--labels JUDGE.jsonl --human PERSON_LABELS.jsonl``. The runs are only read
(:mod:`receval.analysis.pool`); ``receval judge`` labels the pool. ``--nuggets``: the
support pool instead, one line per (question, nugget, unit in the top ``--depth``), role
``support``, for ``receval judge judge=llm`` to say whether the unit supports the nugget
(:mod:`receval.analysis.nugget_pool`).
"""

from __future__ import annotations

import json
import sys

from receval.analysis.humans import human_pool
from receval.analysis.nugget_pool import support_pool
from receval.analysis.pool import DEFAULT_MEASURES, DEPTH_DECIDES, pool
from receval.cli import options
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.core.io import atomic_write
from receval.core.ranges import SEED
from receval.datasets import load_sections
from receval.core import trust
from receval.core.errors import RunError
from receval.results.format import CONFIG_PATH
from receval.results.discovery import load_runs
from receval.results.stored import Run

__all__ = ["main", "unit_texts"]


def unit_texts(run: Run) -> dict[str, str]:
    """Unit id -> text, from the dataset the run's saved config names, read locally.
    Pooling sends nothing, so only the dataset node is checked: a run whose retriever,
    transform or re-ranker is remote (HyDE, an LLM re-ranker) needs no flag, while a
    dataset that would be fetched or holds an interpolation is refused."""
    from omegaconf import OmegaConf

    from receval.run.config import DatasetConfig

    where = run.run_dir / CONFIG_PATH
    node = run.config.get("dataset") if isinstance(run.config, dict) else None
    if not isinstance(node, dict):
        raise RunError(f"{where}: no saved dataset; cannot read the pooled units' texts")
    if trust.holds_interpolation(node):
        raise RunError(f"{where}: the saved dataset holds an interpolation (${{...}}); a stored run is data and "
                       "receval evaluates none: re-run it with this receval (it saves the path it read)")
    trust.check_reach({"dataset": node}, where, allow_remote=False, allow_code=False)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(DatasetConfig), node)
    except Exception as error:  # noqa: BLE001 - omegaconf's validation errors: the stored dataset does not fit
        raise RunError(f"{where}: its saved dataset does not fit this receval ({str(error).splitlines()[0]})") from None
    return {section.id: section.text for section in load_sections(cfg)}


def check_seed(seed: int) -> None:
    """``--seed`` in the range every seed has (:data:`receval.core.ranges.SEED`), before any run is read."""
    if not SEED[0] <= seed <= SEED[1]:
        raise RecevalError(f"--seed {seed}: give an integer from {SEED[0]} to {SEED[1]} (e.g. 0)")


def stored_documents(runs: list[Run]) -> dict[str, str]:
    """Unit id -> text of the ids that are no unit of the dataset, as imported traces keep
    them (column ``documents``, :mod:`receval.traces`); the first text given wins."""
    texts: dict[str, str] = {}
    for run in runs:
        if "documents" in run.table.column_names:
            for documents in run.table.column("documents").to_pylist():
                for document in documents or []:
                    if document.get("text") is not None:
                        texts.setdefault(document["id"], document["text"])
    return texts


def summary_line(pooled, n_runs: int, out) -> str:
    """What the pool holds and, for a depth pool, what it decides."""
    pairs = pooled.pairs
    holes = sum(p.role == "hole" for p in pairs)
    questions = len({p.question_id for p in pairs if p.role == "hole"})
    calibration = sum(p.role == "calibration" for p in pairs)
    if pooled.budget is None:
        design = (f"(depth {pooled.depth}, which decides {DEPTH_DECIDES.format(d=pooled.depth)}; recall, ap and ndcg "
                  "also count relevant units below it: pool --budget N samples deeper)")
    else:
        design = (f"drawn by the budget design from {pooled.universe} in the top {pooled.depth} "
                  f"({pooled.certain} for certain, the rest with inclusion probabilities < 1)")
    return (f"receval: pooled {holes} unlabelled pairs over {questions} questions from {n_runs} runs {design}, "
            f"{calibration} calibration pairs; wrote {out}")


def write_for_humans(runs: list[Run], args, out) -> int:
    """``--for-humans N``: the person's sample of the judge's labels (:mod:`receval.analysis.humans`)."""
    if not args.judged:
        raise RecevalError("--for-humans: give the judge's labels to draw from with --judged LABELS.jsonl")
    if args.budget is not None or args.calibrate:
        raise RecevalError("--for-humans draws from a judge's labels: drop --budget and --calibrate")
    outputs.check_output(args.out, force=args.force, protected_dirs=[*args.runs, args.judged])
    records, notes = human_pool(runs, args.judged, args.for_humans, args.seed)
    texts = {**stored_documents(runs), **(unit_texts(runs[0]) if runs else {})}
    lines = "".join(json.dumps({**r, "text": texts.get(r["id"]), "role": "hole"}, ensure_ascii=False) + "\n"
                    for r in records)
    atomic_write(out, lambda tmp: tmp.write_text(lines, encoding="utf-8"))
    print(f"receval: {len(records)} of the judge's labelled pairs for a person to label, " + "; ".join(notes)
          + f"; wrote {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        parser = options.ArgumentParser(
            prog="receval pool",
            description="Pool the unlabelled (question, unit) pairs the runs retrieved, for a judge.",
        )
        parser.add_argument("runs", nargs="+", metavar="RUN", help="run or sweep directories")
        parser.add_argument("--depth", type=int, default=None,
                            help="top units pooled per run and question (default 10; with --budget, all retrieved)")
        parser.add_argument("--budget", type=int, default=None, metavar="N",
                            help="draw at most N holes by a stratified design with known inclusion probabilities")
        parser.add_argument("--measures", default=",".join(DEFAULT_MEASURES), metavar="M,M",
                            help="measures the --budget design serves (default ap,ndcg@10)")
        parser.add_argument("--out", required=True, metavar="FILE.jsonl", help="the pool, one JSON line per pair")
        parser.add_argument("--calibrate", type=int, default=0, metavar="N",
                            help="add N already-labelled pairs (seeded) to measure the judge's agreement")
        parser.add_argument("--seed", type=int, default=0, help="seed of the calibration sample and the draw (default 0)")
        parser.add_argument("--for-humans", type=int, default=None, metavar="N",
                            help="instead: draw N of a judge's labelled pairs for a person to label (with --judged)")
        parser.add_argument("--stratify", choices=("judge",), default="judge",
                            help="--for-humans strata: the judge's grade, Neyman-allocated (default judge)")
        parser.add_argument("--judged", metavar="LABELS.jsonl",
                            help="--for-humans: the judge's labels (its agreement file beside them gives the spreads)")
        parser.add_argument("--nuggets", action="store_true",
                            help="pool (question, nugget, unit) for a judge of nugget support instead")
        outputs.add_force(parser)
        args = parser.parse_args(argv)
        check_seed(args.seed)
        out = outputs.check_output(args.out, force=args.force, protected_dirs=args.runs)
        runs = load_runs(args.runs, skip=frozenset())
        if args.for_humans is not None:
            return write_for_humans(runs, args, out)
        depth = args.depth if args.depth is not None or args.budget is not None else 10
        if args.nuggets:
            if args.calibrate or args.budget is not None:
                raise RecevalError("--calibrate and --budget sample labelled grades; leave them out with --nuggets")
            pairs, run_lines = support_pool(runs, depth), []
        else:
            measures = tuple(m.strip() for m in args.measures.split(",") if m.strip())
            pooled = pool(runs, depth, args.calibrate, args.seed, args.budget, measures)
            pairs, run_lines = pooled.pairs, pooled.runs
        texts = {**stored_documents(runs), **(unit_texts(runs[0]) if runs else {})}
        lines = "".join(json.dumps(p.to_dict(texts.get(p.id)), ensure_ascii=False) + "\n" for p in pairs)
        lines += "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in run_lines)
        atomic_write(out, lambda tmp: tmp.write_text(lines, encoding="utf-8"))
        if args.nuggets:
            print(f"receval: pooled {len(pairs)} (nugget, unit) pairs over {len({p.question_id for p in pairs})} "
                  f"questions from {len(runs)} runs (depth {depth}); wrote {out}", file=sys.stderr)
            return 0
        print(summary_line(pooled, len(runs), out), file=sys.stderr)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
