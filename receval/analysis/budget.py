"""Measures derived from a stored run's per-rank columns: any token budget (``hit@300tok``,
``recall@1000tok``, ``context_tokens@500tok``), and any k of the chunk measures
(``redundancy@7``) and of hit, recall, precision, nDCG and AP.

A run stores each rank's chunk tokens, its units' first chunk ranks, gains and the rest
(:data:`receval.results.format.RANKS`); the budget's cut is
:mod:`receval.scoring.budget`'s rule and every formula :mod:`receval.scoring.measures`'s or
:mod:`receval.scoring.chunks`'s, the code the run itself scored with (so ``hit@3`` derived
here equals the stored ``hit@3``, a tested invariant). The columns are read through the
door (:func:`receval.results.door.open_run`) only when a derived measure asks for them.

Budgets are comparable only when counted alike: runs whose ``run.json`` ``budget`` differ
(words, or another tokenizer.json) are refused together. A question whose ranking holds
fewer tokens than the budget at the run's full depth did not spend it; the runs with such
questions are named in a warning (raise ``depth`` to spend it).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from receval.core.errors import RecevalError
from receval.core.progress import warn
from receval.results import ranks
from receval.results.door import open_run
from receval.results.record import RANK_COLUMNS
from receval.scoring import budget, declared
from receval.scoring.chunks import ChunkRanking
from receval.scoring.declared import Measure, MeasureName
from receval.scoring.rows import judged_of

WORDS = {"unit": "words"}
MISSING = {  # why a run cannot give a chunk measure
    "evidence": "the run holds no evidence tokens per chunk (re-scored with --labels, whose labels they do not follow)",
    "new": "the run stores no per-chunk new tokens; re-run it",
    "novelty": "the run stores no alpha-nDCG gains (re-scored with --labels, or written before they were stored)",
    "nugget_at": "the run's questions have no nuggets: give them with dataset.nuggets=FILE and re-run",
}


def derivable(name: str) -> MeasureName | None:
    """The measure ``name`` asks this module for: a budget measure, a chunk measure at any
    k, or hit, recall, precision, nDCG or AP at any k; None for anything else."""
    for parse in (declared.parse_measure, declared.parse_chunk_measure):
        try:
            parsed = parse(name)
        except ValueError:
            continue
        family = declared.family(parsed.family)
        if parsed.budget is not None or family.reads == declared.CHUNKS:
            return parsed
        if family.at_budget and family.at_k and parsed.k is not None:
            return parsed
    return None


def budget_unit(run) -> dict:
    """What counted a run's budget (run.json's ``budget``; words when it says nothing)."""
    unit = run.info.get("budget") if isinstance(run.info, dict) else None
    return unit if isinstance(unit, dict) else WORDS


def check_units(runs: list, names: list[str], option: str) -> None:
    """Budgets of runs counted by different tokenizers are not comparable: an error."""
    asked = [n for n in names if declared.budget_of(n) is not None]
    if not asked or len(runs) < 2:
        return
    units = {}
    for run in runs:
        unit = budget_unit(run)
        units.setdefault(unit.get("sha256", unit.get("unit")), []).append(str(run.run_dir))
    if len(units) > 1:
        shown = "; ".join(f"{key}: {', '.join(dirs[:3])}" for key, dirs in units.items())
        raise RecevalError(
            f"{option}: {asked[0]}: the runs count tokens differently ({shown}); a token budget compares runs "
            "counted alike: give runs with the same metrics.tokenizer"
        )


def _rank_table(run, option: str, name: str) -> pa.Table:
    """The run's per-rank columns, row for row with its table (read through the door when
    the table lacks them)."""
    table = run.table
    if "chunk_tokens" in table.column_names and "retrieved_at" in table.column_names:
        return table
    stored = open_run(run.run_dir, skip=frozenset(), only=RANK_COLUMNS).table if run.run_dir.is_dir() else None
    if stored is None or "chunk_tokens" not in stored.column_names or "retrieved_at" not in stored.column_names:
        raise RecevalError(
            f"{option}: {name} is derived from each rank's chunk tokens, which {run.run_dir} does not store "
            "(a run written before receval stored them, or an imported one): re-run it"
        )
    ids = stored.column("question_id").to_pylist()
    where = {qid: i for i, qid in enumerate(ids)}
    return stored.take(pa.array([where[qid] for qid in run.ids], pa.int64()))


class Derivation:
    """One run's per-rank columns as arrays, measured at any k or budget."""

    def __init__(self, table: pa.Table):
        words, self.lengths = ranks.padded(table.column("chunk_tokens"), np.int64)
        column = lambda name: ranks.padded(table.column(name))[0] if name in table.column_names else None  # noqa: E731
        scalar = lambda name: ranks.scalar(table.column(name)) if name in table.column_names else None  # noqa: E731
        self.unit_at, self.n_retrieved = ranks.padded(table.column("retrieved_at"), np.int64)
        n_units = scalar("n_units")
        self.scored = ~np.isnan(n_units)
        self.judged = judged_of(column("retrieved_gain"), column("retrieved_found"), np.nan_to_num(n_units),
                                column("ideal_gains"))
        nugget_at = column("nugget_at")
        vital = ranks.padded_equal(table.column("nugget_importance"), "vital") \
            if nugget_at is not None and "nugget_importance" in table.column_names else None
        nugget_count = ranks.padded(table.column("nugget_at"))[1] if nugget_at is not None else None
        self.ranking = ChunkRanking(
            lengths=self.lengths, words=words, new=column("chunk_new_tokens"), evidence=column("chunk_evidence_tokens"),
            evidence_total=np.nan_to_num(scalar("evidence_tokens")), tokens=column("chunk_llm_tokens"),
            novelty=column("chunk_novelty"), novelty_ideal=column("novelty_ideal"), nugget_at=nugget_at,
            nugget_vital=vital,
            nugget_valid=None if nugget_count is None else np.arange(nugget_at.shape[1])[None, :] < nugget_count[:, None],
        )

    def chunks_within(self, budget_tokens: int) -> np.ndarray:
        return budget.chunks_within(self.ranking.sent, self.lengths, budget_tokens)

    def values(self, name: MeasureName) -> np.ndarray:
        """(Q,) the measure, NaN where the run scores nothing (unanswerable; no nuggets)."""
        family = declared.family(name.family)
        if family.reads == declared.CHUNKS:
            if family.needs is not None and getattr(self.ranking, family.needs) is None:
                raise RecevalError(f"{name.name}: {MISSING[family.needs]}")
            k = self.chunks_within(name.budget) if name.budget is not None else name.k
            values = declared.chunk_measure(name, self.ranking, k)
            return values if family.own_nulls else np.where(self.scored, values, np.nan)
        if name.budget is not None:
            k = budget.units_within(self.unit_at, self.chunks_within(name.budget))
        else:
            k = np.full(self.lengths.shape, name.k, dtype=np.int64)
        return np.where(self.scored, Measure(name.family).at(self.judged, k), np.nan)


def with_budget_columns(run, parsed: list[MeasureName], option: str):
    """``run`` with a column for each measure of ``parsed`` it does not hold yet."""
    missing = [p for p in parsed if p.name not in run.table.column_names]
    if not missing:
        return run
    derivation = Derivation(_rank_table(run, option, missing[0].name))
    depth = run.flat.get("depth") if run.flat else None
    table = run.table
    warned: set[int] = set()
    for name in missing:
        of_units = declared.family(name.family).reads == declared.UNITS
        if of_units and name.k is not None and isinstance(depth, int) and name.k > depth:
            raise RecevalError(f"{option}: {name.name} is beyond {run.run_dir}'s depth {depth}; use k <= {depth}")
        values = derivation.values(name)
        if not declared.lower_is_better(name.name) and (values > 1 + 1e-9).any():  # only an edited file gets here
            raise RecevalError(f"{run.run_dir}: its per-rank columns give {name.name} above 1; not results receval "
                               "wrote (edited, or from another tool); re-run this job")
        table = table.append_column(name.name, pa.array(values, pa.float64(), mask=np.isnan(values)))
        if name.budget is not None and name.budget not in warned:
            warned.add(name.budget)
            short = budget.short_of(derivation.ranking.sent, derivation.lengths, depth if isinstance(depth, int) else None,
                                    name.budget) & derivation.scored
            if short.any():
                warn(f"{run.run_dir}: {int(short.sum())} of {int(derivation.scored.sum())} questions' rankings hold "
                     f"fewer than {name.budget} tokens at depth {depth}, so {name.name} does not spend the budget "
                     "there; re-run with a larger depth")
    return run.filtered(table)
