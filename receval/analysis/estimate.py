"""Runs scored from a judged sample (``report --labels`` with the labels of a budgeted
pool): each measure the sample can estimate becomes a per-question column of estimates,
and each run's mean an interval over the judging.

The sample is the labelled holes carrying ``inclusion``, ``stratum`` and ``drawn``
(:func:`receval.results.judgments.read_label_file`); the stored labels and any other
label file are known for certain. A drawn hole the judge left ungraded is taken to be
like the graded ones of its stratum (its stratum's probability scaled by graded / drawn),
and said so. From these, :mod:`receval.stats.estimators` gives per question

- ``ap``, ``ap@k``, ``ndcg@k``, ``precision@k``, ``recall@k``: estimates (statAP,
  inferred nDCG, Horvitz-Thompson);
- ``judged@k``: the share of the top k that is labelled (known or drawn), as ever;
- ``rr``, ``hit@k``: exact where every unit above the first relevant one (the top k) is
  labelled, for every run and question; otherwise not decided by the sample and left
  out, named; ``rprec``, ``bpref``: left out (they need every relevant unit's rank).

The runs shown keep their questions and order; the stored files are not touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from receval.core.errors import RecevalError
from receval.scoring.declared import is_measure, measure_label, parse_measure
from receval.results.judgments import Labels, rescore, stored_labels
from receval.results.stored import Run
from receval.stats.estimators import ESTIMATED, DesignInterval, design_intervals, estimate, ratio_risk, working_sample

DECIDABLE = ("rr", "hit", "judged")  # exact where the labelled top decides them
MAX_REPLICATES = 500  # Rao-Wu replicates at most, whatever the bootstrap settings ask


@dataclass
class Estimation:
    """What the estimates rest on, and their judging intervals once asked for."""

    files: list[str]
    measures: list[str]  # estimated columns
    dropped: list[str]  # measure columns the sample does not decide
    drawn: int  # holes drawn (the design's n)
    graded: int  # of them, labelled
    strata: int
    certain: int  # drawn holes of inclusion 1
    risk: float  # receval.stats.estimators.ratio_risk
    working: object = None
    ranked: np.ndarray | None = None
    scored: dict = field(default_factory=dict)  # measure -> (R, Q) questions scored
    questions: list[str] = field(default_factory=list)
    run_dirs: list = field(default_factory=list)  # the runs estimated, in the rows of ranked
    intervals: dict[str, list[DesignInterval | None]] = field(default_factory=dict)  # per report run
    level: float = 0.95
    n_resamples: int = 0

    def judge_intervals(self, runs: list[Run], shown_measures: list[str], level: float, n_resamples: int,
                        seed: int) -> None:
        """Each run's mean of each estimated measure the report shows, over its questions
        shown (``runs``, after --where/--split), with its interval over the judging."""
        measures = [m for m in shown_measures if m in self.measures] or self.measures[:1]
        self.level, self.n_resamples = level, min(int(n_resamples), MAX_REPLICATES)
        index = {q: i for i, q in enumerate(self.questions)}
        where = {run_dir: i for i, run_dir in enumerate(self.run_dirs)}
        present = [(r, where[run.run_dir]) for r, run in enumerate(runs) if run.run_dir in where]
        rows = [row for _, row in present]
        shown = np.zeros((len(rows), len(self.questions)), dtype=bool)
        for k, (r, _) in enumerate(present):
            shown[k, [index[q] for q in runs[r].ids if q in index]] = True
        scored = {name: self.scored[name][rows] & shown for name in measures}
        found = design_intervals(self.working, self.ranked[rows], measures, scored, level, max(self.n_resamples, 2), seed)
        self.intervals = {name: [None] * len(runs) for name in measures}
        for name, intervals in found.items():
            for (r, _), interval in zip(present, intervals):
                self.intervals[name][r] = interval

    def cautions(self) -> list[str]:
        files = ", ".join(self.files)
        families = ", ".join(dict.fromkeys(measure_label(parse_measure(m).family if parse_measure(m).k is None
                                                     else f"{parse_measure(m).family}@k") for m in self.measures))
        out = [f"estimated from a judged sample ({files}): {self.graded} of {self.drawn} drawn holes labelled, "
               f"{self.certain} of them drawn for certain, over {self.strata} strata; {families} are estimates "
               "(statAP, inferred nDCG, Horvitz-Thompson: each labelled hole weighs 1 / its inclusion probability)"]
        if self.graded < self.drawn:
            out.append(f"{self.drawn - self.graded} drawn holes carry no label: each is taken to be like the labelled "
                       "ones of its stratum; a judge that labels only what it finds relevant (judge=qrels without "
                       "judge.missing=zero on a file listing every judgement) makes these estimates run high")
        if self.dropped:
            out.append("not decided by the sample, left out: " + ", ".join(measure_label(m) for m in self.dropped)
                       + " (they need every unit above a rank labelled, or every relevant unit's rank)")
        if self.risk > 0.25:
            out.append(f"{self.risk:.0%} of the estimated relevant units rest on holes drawn with probability < 1: "
                       "ratio estimates (AP, recall, nDCG) run high when few relevant holes are drawn per question; "
                       "their intervals reach down to a linearised estimate's bound, which runs low, and are wide; "
                       "the order of the runs suffers less")
        return out

    def lines(self, labels: list[str]) -> list[str]:
        if not self.intervals:
            return []
        out = [f"Estimated means and their {self.level:.0%} intervals over the judging (questions fixed; "
               f"{self.n_resamples} Rao-Wu replicates of the drawn holes; AP, recall and nDCG bracketed between a "
               "linearised estimate's lower bound and the ratio's upper bound):"]
        for i, label in enumerate(labels):
            parts = [f"{measure_label(m)} {iv[i].estimate:.3f} [{iv[i].lo:.3f}, {iv[i].hi:.3f}]"
                     for m, iv in self.intervals.items() if iv[i] is not None]
            out.append(f"  #{i} {label}: " + (", ".join(parts) or "not estimated (not among the runs relabelled)"))
        return out

    def to_dict(self, labels: list[str]) -> dict:
        return {
            "files": self.files, "estimated": self.measures, "not_decided": self.dropped, "drawn": self.drawn,
            "labelled": self.graded, "strata": self.strata, "certain": self.certain, "ratio_risk": self.risk,
            "level": self.level, "replicates": self.n_resamples,
            "runs": [{"label": label, **{m: {"mean": iv[i].estimate, "ci": [iv[i].lo, iv[i].hi], "se": iv[i].se}
                                          for m, iv in self.intervals.items() if iv[i] is not None}}
                     for i, label in enumerate(labels)],
        }


def effective(records: list[dict], known: Labels) -> tuple[list[dict], int, int, int]:
    """The sampled records not known otherwise, each with its stratum's inclusion
    probability scaled for the drawn holes left ungraded; drawn, graded, strata."""
    kept = [r for r in records if r["id"] not in known.get(r["question_id"], {})]
    by_stratum: dict[int, list[dict]] = {}
    for r in kept:
        by_stratum.setdefault(int(r["stratum"]), []).append(r)
    drawn = 0
    out = []
    for stratum, members in by_stratum.items():
        n_drawn = max(int(members[0]["drawn"]), len(members))
        drawn += n_drawn
        scale = len(members) / n_drawn
        out += [{**r, "inclusion": float(r["inclusion"]) * scale} for r in members]
    return out, drawn, len(out), len(by_stratum)


def known_labels(runs: list[Run], added: Labels) -> Labels:
    """Labels known for certain: every run's stored ones, then the added ones (stored first)."""
    known: Labels = {}
    for run in runs:
        for qid, units in stored_labels(run).items():
            for uid, grade in units.items():
                known.setdefault(qid, {}).setdefault(uid, int(grade))
    for qid, units in added.items():
        for uid, grade in units.items():
            known.setdefault(qid, {}).setdefault(uid, int(grade))
    return known


def ranked_units(runs: list[Run], qindex: dict[str, int], units: dict[tuple[str, str], int]) -> np.ndarray:
    """(R, Q, depth) each run's ranking as indices of ``units`` ((question, unit) -> index),
    -1 for a unit not among them or a rank with nothing retrieved."""
    rankings = [run.table.column("retrieved").to_pylist() for run in runs]
    depth = max((len(r or []) for ranking in rankings for r in ranking), default=1)
    ranked = np.full((len(runs), len(qindex), max(depth, 1)), -1, dtype=np.int64)
    for i, (run, ranking) in enumerate(zip(runs, rankings)):
        for qid, retrieved in zip(run.ids, ranking):
            ranked[i, qindex[qid], : len(retrieved or [])] = [units.get((qid, uid), -1) for uid in retrieved or []]
    return ranked


def _decided(run: Run, labelled: Labels, family: str, k: int | None) -> bool:
    """Every question of the run decides ``family`` (rr, hit@k) from its labelled units:
    each unit above its first labelled relevant unit (within the top k) is labelled."""
    for qid, ranked in zip(run.ids, run.table.column("retrieved").to_pylist()):
        units = labelled.get(qid, {})
        top = (ranked or [])[: k or None]
        for uid in top:
            grade = units.get(uid)
            if grade is None:
                return False
            if grade >= 1:
                break
    return True


def estimate_runs(runs: list[Run], sampled: list[dict], added: Labels, files: list[str]) -> tuple[list[Run], Estimation]:
    """Every run re-scored from the sample (module docstring): the runs with their
    estimated columns, and what the estimates rest on."""
    questions = list(dict.fromkeys(q for run in runs for q in run.ids))
    qindex = {q: i for i, q in enumerate(questions)}
    known = known_labels(runs, added)
    unknown = sorted({r["question_id"] for r in sampled} - set(qindex))
    if unknown:
        raise RecevalError(f"--labels: the sample labels {len(unknown)} questions no run has ({', '.join(unknown[:5])}): "
                           "estimate with the runs that were pooled")
    kept, drawn, graded, strata = effective(sampled, known)
    units: dict[tuple[str, str], int] = {}
    rows = []  # (question index, grade, inclusion, stratum)
    for qid, labels in known.items():
        if qid in qindex:
            for uid, grade in labels.items():
                units[qid, uid] = len(rows)
                rows.append((qindex[qid], grade, 1.0, -1))
    for r in kept:
        units[r["question_id"], r["id"]] = len(rows)
        rows.append((qindex[r["question_id"]], int(r["grade"]), float(r["inclusion"]), int(r["stratum"])))
    columns = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
    working = working_sample(columns[:, 0], columns[:, 1], columns[:, 2], columns[:, 3], len(questions),
                             max(int(columns[:, 1].max(initial=1)), 1))
    ranked = ranked_units(runs, qindex, units)
    names = [n for n in runs[0].table.column_names if is_measure(n) and all(n in r.table.column_names for r in runs)]
    estimated = [n for n in names if parse_measure(n).family in ESTIMATED]
    labelled = {q: dict(v) for q, v in known.items()}
    for r in kept:
        labelled.setdefault(r["question_id"], {})[r["id"]] = int(r["grade"])
    dropped = [n for n in names if n not in estimated and not (
        parse_measure(n).family in DECIDABLE and (parse_measure(n).family == "judged" or all(
            _decided(run, labelled, parse_measure(n).family, parse_measure(n).k) for run in runs)))]
    values = estimate(working, ranked, estimated)
    scored = {}
    out = []
    for i, run in enumerate(runs):
        rescored, _ = rescore(run, labelled, ", ".join(files))
        table = rescored.table.drop_columns([n for n in dropped if n in rescored.table.column_names])
        rows_of = np.asarray([qindex[q] for q in run.ids], dtype=np.int64)
        for name in estimated:
            stored = run.values(name)
            answered = np.isfinite(stored)
            column = np.where(answered, values[name][i, rows_of], np.nan)
            mask = np.zeros(len(questions), dtype=bool)
            mask[rows_of[answered]] = True
            scored.setdefault(name, np.zeros((len(runs), len(questions)), dtype=bool))[i] = mask
            position = table.column_names.index(name)
            table = table.set_column(position, table.schema.field(name),
                                     pa.array([None if np.isnan(v) else float(v) for v in column], pa.float64()))
        metadata = {**rescored.metadata, "estimated_from": ", ".join(files)}
        out.append(Run(run.run_dir, table, metadata, run.info, run.config, run.overrides))
    certain = sum(1 for r in kept if r["inclusion"] >= 1.0)
    estimation = Estimation(list(files), estimated, dropped, drawn, graded, strata, certain, ratio_risk(working),
                            working, ranked, scored, questions, [run.run_dir for run in runs])
    return out, estimation
