"""The report as data: every run's means and intervals, the pairs against a
baseline, the chain, the breakdowns, the floors, what came back per question. Each
part is computed by its own function (:mod:`.summary`, :mod:`.pairs`, :mod:`.chain`,
:mod:`.breakdown`, :mod:`.show`); :mod:`.compose` composes them from a
:class:`ReportOptions` (``receval report`` and the Python API alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from receval.analysis.breakdown import ByTable, QuestionRow
from receval.analysis.latency import LatencyOrder
from receval.analysis.pairs import Pair
from receval.analysis.significance import Sureness
from receval.analysis.summary import RunSummary, failures
from receval.core.settings import BootstrapConfig
from receval.stats.gate import Gate
from receval.stats.verdict import GateOutcome

OVERLAP_THRESHOLDS = (0.3, 0.6)  # low < 0.3 <= medium < 0.6 <= high


@dataclass(frozen=True)
class ReportOptions:
    """What a report is asked for, as plain values: ``receval report``'s flags once read
    (:mod:`receval.cli.report`), or the Python API's arguments
    (:func:`receval.analysis.api.report_for`). Each field is the flag of that name;
    ``names`` maps parameters to the flags messages name (:func:`receval.core.errors.named`)."""

    runs: tuple[str | Path, ...]  # run, sweep or sweep-folder paths (TREC run files with qrels)
    metrics: list[str] | None = None  # the measures shown (default hit@1, hit@3, recall@3, rr, ndcg@5)
    metric: str = "rr"  # the one with the interval column, the pairs and the plot
    where: list[tuple[str, str]] = field(default_factory=list)  # questions kept: (column, value)
    floors: Mapping[str, str] = field(default_factory=dict)  # --fail-under, as given (read once runs are)
    show: list[str] | str | None = None  # question ids, "misses", "changed" or "all"
    top: int = 5
    margin: float = 0.0
    qrels: str | Path | None = None
    select_runs: str | None = None  # --runs KEY=VALUE
    baseline: str | None = None
    gate: str | None = None
    by: str | None = None
    by_metric: str | None = None
    overlap_thresholds: tuple[float, float] = OVERLAP_THRESHOLDS
    overlap_measure: str = "rouge1_p"
    per_question: bool = False
    chain: bool = False
    all_pairs: bool = False
    intersect: bool = False
    correct: str | None = None
    effects: bool = False
    detect: float | None = None
    ranks: bool = False
    calibrate: bool = False
    suite: bool = False
    labels: list[str] = field(default_factory=list)
    human: list[str] = field(default_factory=list)
    versus: list[str] = field(default_factory=list)
    unknown_units: str = "skip"
    agreement: bool = False
    precision: float = 0.05
    n_resamples: int | None = None
    seed: int | None = None
    level: float | None = None
    method: str | None = None
    names: Mapping[str, str] | None = None


@dataclass
class Report:
    """Everything the report shows, computed once (the command composes it from the
    functions of :mod:`receval.analysis`); :mod:`receval.render.report` formats it, and
    :meth:`to_dict` is its JSON."""

    runs: list[RunSummary]
    params: list[str]  # what differs between the runs: the parameter columns (receval.results.labels)
    metrics: list[str]  # canonical measure names, in column order
    metric: str  # the measure with the CI column, the baseline pairs and the plot
    questions: dict  # header counts
    boot: BootstrapConfig
    where: list[tuple[str, str]] = field(default_factory=list)
    baseline: int | None = None  # index into runs
    pairs: list[Pair] = field(default_factory=list)
    by: ByTable | None = None
    per_question: list[QuestionRow] | None = None
    floors: dict[str, float] = field(default_factory=dict)  # --fail-under
    by_more: list[ByTable] = field(default_factory=list)  # --by over further --metrics
    shown: list | None = None  # --show: receval.analysis.show.QuestionView per question
    gate: Gate | None = None  # --gate: the run gated against its baseline, and the outcome
    chain: list[Pair] = field(default_factory=list)  # --chain: each run against the one before (receval.analysis.chain)
    cautions: list[str] = field(default_factory=list)  # what makes the table misleading (latencies under unlike load)
    all_pairs: list[Pair] = field(default_factory=list)  # --all-pairs: every run against every earlier one
    sure: Sureness | None = None  # --correct/--effects/--detect/--ranks/--calibrate (receval.analysis.significance)
    relabelled: list[str] = field(default_factory=list)  # --labels: what was added, contradictions
    label_agreement: Any = None  # --agreement: receval.analysis.holes.LabelAgreement
    ppi: list = field(default_factory=list)  # --human: receval.stats.ppi.PpiInterval per run
    undecided: list = field(default_factory=list)  # receval.analysis.decidable.Undecided per measure the set cannot decide on
    latency: LatencyOrder | None = None  # which timed run is faster than which (receval.analysis.latency)
    estimation: Any = None  # --labels from a judged sample: receval.analysis.estimate.Estimation
    stratified_ppi: list = field(default_factory=list)  # --human from pool --for-humans: analysis.humans.StratifiedPpi
    certify: list = field(default_factory=list)  # --agreement: receval.analysis.humans.Certify per judge file

    def shown_pairs(self) -> list[Pair]:
        """Every pair the report shows (baseline, chain, all pairs): the family a
        correction covers."""
        return [*self.pairs, *self.chain, *self.all_pairs]

    def pairs_correction(self) -> str | None:
        """The correction the shown pairs carry, in words, or None."""
        pairs = self.shown_pairs()
        if not pairs or pairs[0].correction is None:
            return None
        count = len({(p.a, p.b) for p in pairs})
        what = {"holm": "Holm's family-wise", "bh": "Benjamini-Hochberg's false discovery rate"}[pairs[0].correction]
        return f"corrected: {what} over {count} pair{'s' * (count != 1)}, each interval at its corrected level"

    def _pair_dict(self, pair: Pair) -> dict:
        out = pair.against_baseline()
        tested = self.sure.for_pair(pair) if self.sure is not None else None
        return {**out, **tested.as_dict()} if tested is not None else out

    # ------------------------------------------------------------- dict / json

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "runs": [run.to_dict() for run in self.runs],
            "pairs": [self._pair_dict(p) for p in self.pairs],
            "params": self.params,
            "metrics": self.metrics,
            "metric": self.metric,
            "questions": self.questions,
            "where": {c: v for c, v in self.where},
            "bootstrap": self.boot.kwargs(),
            "baseline": self.runs[self.baseline].run_dir if self.baseline is not None else None,
        }
        if self.gate is not None:
            out["gate"] = self.gate.to_dict()
        if self.latency is not None:
            out["latency"] = self.latency.to_dict()
        if self.cautions:
            out["warnings"] = list(self.cautions)
        if self.undecided:
            out["undecided"] = [u.to_dict() for u in self.undecided]
        if self.relabelled:
            out["labels"] = list(self.relabelled)
        if self.ppi:
            out["ppi"] = [
                {"label": run.label, "mean": p.estimate, "ci": [p.lo, p.hi], "lambda": p.lam,
                 "n_labelled": p.n_labelled, "n_unlabelled": p.n_unlabelled,
                 "human_only": {"mean": p.classical[0], "ci": list(p.classical[1:])}}
                for run, p in zip(self.runs, self.ppi)
            ]
        if self.stratified_ppi:
            out["ppi"] = [{"label": run.label, "mean": p.estimate, "ci": [p.lo, p.hi], "design": "stratified by judge grade",
                           "n_labelled": p.n_labelled, "n_judged": p.n_judged,
                           "human_only": {"mean": p.alone[0], "ci": list(p.alone[1:])}}
                          for run, p in zip(self.runs, self.stratified_ppi)]
        if self.certify:
            out["certify"] = [c.to_dict() for c in self.certify]
        if self.estimation is not None:
            out["estimated"] = self.estimation.to_dict([run.label for run in self.runs])
        if self.label_agreement is not None:
            out["label_agreement"] = self.label_agreement.to_dict([run.label for run in self.runs])
        if self.floors:
            out["fail_under"] = {
                "floors": self.floors,
                "failures": self.failures(),
            }
        if self.chain:
            out["chain"] = [self._pair_dict(p) for p in self.chain]
        if self.all_pairs:
            out["all_pairs"] = [self._pair_dict(p) for p in self.all_pairs]
        if self.sure is not None:
            out["sureness"] = self.sure.to_dict()
            if self.sure.ranks is not None:
                for run, rank in zip(out["runs"], self.sure.ranks):
                    run["rank"], run["rank_ci"] = rank.rank, [rank.lo, rank.hi]
        if self.by is not None:
            out["by"] = self.by.to_dict(self.runs)
        if self.by_more:  # --by over each further --metrics measure
            out["by_more"] = [b.to_dict(self.runs) for b in self.by_more]
        if self.per_question is not None:
            out["per_question"] = [row.to_dict() for row in self.per_question]
        return out

    def failures(self) -> list[str]:
        """One line per run and measure whose mean is below its floor."""
        return failures(self.runs, self.floors)

    def exit_code(self) -> int:
        """The command's exit status: 1 when the gate fails or a run is under a floor
        (``--fail-under``), else 3 when the gate is undecided, else 0."""
        outcome = self.gate.outcome if self.gate is not None else GateOutcome.passed
        if outcome is GateOutcome.failed or self.failures():
            return 1
        return outcome.exit_code
