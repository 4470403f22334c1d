"""Judgment holes: how much of what the runs shown retrieved carries a label at all.

A run is scored only on the units its labels know; an unlabelled unit counts as not
relevant. When the labels cover little of a run's top k (a synthetic question set
labels one passage per question), its scores measure agreement with those few labels,
and a run that retrieves many unlabelled units is punished for them whether they
answer the question or not. The report says so, from the stored ``judged@k`` column
(:mod:`receval.scoring.measures`):

- **low**: a run's mean judged@k below :data:`LOW_JUDGED` (0.5) at the largest k the
  runs store: more than half of what it shows there is unlabelled.
- **far apart**: two runs' mean share of unlabelled units at that k differs by more
  than :data:`UNJUDGED_GAP` (0.2, i.e. 2 more unlabelled units in 10).

The remedy is to pool and judge what the runs retrieved (``receval pool``,
``receval judge``) and re-score (``report --labels``, :func:`relabel`); with
``--agreement``, :func:`label_agreement` says whether the added labels change the
order of the runs, the winner, or ``select``'s choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from receval.analysis.choice import choose
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError
from receval.core.vocabulary import measure_label
from receval.results.judgments import Conflict, merge_added, read_any_labels, rescore
from receval.results.stored import Run
from receval.stats.concordance import Concordance, tau_interval
from receval.stats.ppi import PpiInterval, ppi_mean

LOW_JUDGED = 0.5
UNJUDGED_GAP = 0.2


def judged_column(runs: list[Run]) -> str | None:
    """The ``judged@k`` column every run holds, at the largest such k (None: a run made
    before the column existed lacks it)."""
    shared = None
    for run in runs:
        ks = {int(name.split("@")[1]) for name in run.table.column_names if name.startswith("judged@")}
        shared = ks if shared is None else shared & ks
    return f"judged@{max(shared)}" if shared else None


def judged_cautions(runs: list[Run], labels: list[str]) -> list[str]:
    """The report's notes on judgment holes (see the module docstring); none when the
    runs lack ``judged@k`` or are well judged."""
    column = judged_column(runs)
    if column is None or not runs:
        return []
    means = np.array([np.nanmean(run.values(column)) if run.table.num_rows else np.nan for run in runs])
    notes = []
    below = np.flatnonzero(means < LOW_JUDGED)
    low = [f"#{i} {labels[i]} {means[i]:.2f}" for i in below]
    if len(low) > 3:
        low = [f"{len(low)} of {len(runs)} runs, {means[below].min():.2f} to {means[below].max():.2f}"]
    if low:
        notes.append(
            f"{column} below {LOW_JUDGED} ({', '.join(low)}): most of what these runs show is unlabelled and "
            "counted as not relevant; pool and judge it (receval pool, receval judge) and "
            "re-score with --labels"
        )
    if len(runs) > 1 and np.isfinite(means).all():
        most, least = int(np.argmin(means)), int(np.argmax(means))
        if means[least] - means[most] > UNJUDGED_GAP:
            notes.append(
                f"#{most} {labels[most]} retrieved far more unlabelled units than #{least} {labels[least]} "
                f"(unlabelled share of the top {column.split('@')[1]}: {1 - means[most]:.2f} vs "
                f"{1 - means[least]:.2f}); their difference may be the labels', not the retrieval's"
            )
    return notes


# ----------------------------------------------------------------- added labels (report --labels)


@dataclass
class Relabelled:
    """The runs re-scored with added labels, and what the labels said."""

    runs: list[Run]
    files: list[str]
    n_added: int  # (question, unit) pairs the files label
    conflicts: list[Conflict]  # stored labels the files contradict (kept; each pair once)
    questions: set[str] = field(default_factory=set)  # questions the files label

    def cautions(self) -> list[str]:
        notes = [f"re-scored with {self.n_added} added labels from {', '.join(self.files)} (stored runs unchanged)"]
        if self.conflicts:
            shown = "; ".join(c.line() for c in self.conflicts[:5])
            more = f" (and {len(self.conflicts) - 5} more)" if len(self.conflicts) > 5 else ""
            notes.append(f"{len(self.conflicts)} added labels contradict stored ones and were not applied: {shown}{more}")
        return notes


def relabel(runs: list[Run], files: list[str], option: str = "--labels") -> Relabelled:
    """Every run re-scored from its stored ranking with the labels of ``files`` merged onto
    its stored labels (:func:`receval.results.judgments.rescore`)."""
    added = merge_added([(f, read_any_labels(f, option)) for f in files], option)
    out, conflicts = [], {}
    for run in runs:
        rescored, found = rescore(run, added, ", ".join(files))
        out.append(rescored)
        conflicts.update({(c.question_id, c.id): c for c in found})
    return Relabelled(out, list(files), sum(len(u) for u in added.values()), list(conflicts.values()),
                      {q for q, units in added.items() if units})


@dataclass
class LabelAgreement:
    """Do the stored and the stored + added labels rank the runs alike?"""

    metric: str
    tau: Concordance
    means_before: list[float]
    means_after: list[float]
    winner_before: int
    winner_after: int
    chosen_before: int | None  # select's choice (its defaults: prefer p50_ms, no margin)
    chosen_after: int | None
    choice_note: str = ""
    before: str = "stored labels"  # what the added labels are compared against

    def lines(self, labels: list[str]) -> list[str]:
        t = self.tau
        out = [
            f"Ranking of {len(labels)} runs by {measure_label(self.metric)}, {self.before} vs stored + added: "
            f"Kendall tau {t.tau:.3f} [{t.lo:.3f}, {t.hi:.3f}] ({t.level:.0%} bootstrap over {t.n_questions} questions)",
            f"winner: before #{self.winner_before} {labels[self.winner_before]} "
            f"({self.means_before[self.winner_before]:.3f}), added #{self.winner_after} {labels[self.winner_after]} "
            f"({self.means_after[self.winner_after]:.3f}): "
            + ("unchanged" if self.winner_before == self.winner_after else "CHANGED"),
        ]
        if self.chosen_before is not None and self.chosen_after is not None:
            out.append(
                f"select's choice: before #{self.chosen_before} {labels[self.chosen_before]}, added "
                f"#{self.chosen_after} {labels[self.chosen_after]}: "
                + ("unchanged" if self.chosen_before == self.chosen_after else "CHANGED")
            )
        elif self.choice_note:
            out.append(f"select's choice: not computed ({self.choice_note})")
        return out

    def to_dict(self, labels: list[str]) -> dict:
        return {
            "metric": self.metric, "versus": self.before, "kendall_tau": self.tau.tau, "ci": [self.tau.lo, self.tau.hi],
            "level": self.tau.level, "n_questions": self.tau.n_questions,
            "means_before": self.means_before, "means_added": self.means_after,
            "winner_before": labels[self.winner_before], "winner_added": labels[self.winner_after],
            "winner_changed": self.winner_before != self.winner_after,
            "choice_before": None if self.chosen_before is None else labels[self.chosen_before],
            "choice_added": None if self.chosen_after is None else labels[self.chosen_after],
            "choice_changed": self.chosen_before != self.chosen_after,
        }


def _aligned(before: list[Run], after: list[Run], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(Q, R) per-question values of every run under both label sets, on the questions
    every run scores under both."""
    common = set(before[0].ids)
    for run in [*before, *after]:
        common &= set(run.ids)
    ids = [q for q in before[0].ids if q in common]

    def matrix(runs: list[Run]) -> np.ndarray:
        columns = []
        for run in runs:
            where = {q: i for i, q in enumerate(run.ids)}
            columns.append(run.values(metric)[[where[q] for q in ids]])
        return np.column_stack(columns) if columns else np.empty((len(ids), 0))

    a, b = matrix(before), matrix(after)
    keep = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    return a[keep], b[keep]


def label_agreement(
    before: list[Run], after: list[Run], metric: str, boot: BootstrapConfig, what: str = "stored labels"
) -> LabelAgreement:
    """Kendall tau (with its bootstrap interval) between the runs' order under the stored
    labels and under stored + added, the winner under each, and ``select``'s choice
    under each (:func:`receval.analysis.choice.choose` with select's defaults)."""
    if len(before) < 2:
        raise RecevalError("--agreement: give at least two runs; it compares how label sets rank runs")
    a, b = _aligned(before, after, metric)
    if a.shape[0] < 2:
        raise RecevalError(f"--agreement: fewer than two questions are scored on {metric} by every run")
    tau = tau_interval(a, b, boot.n_resamples, boot.seed, boot.level)
    means_a, means_b = a.mean(axis=0), b.mean(axis=0)
    chosen, note = [None, None], ""
    try:
        chosen = [choose(runs, metric, "p50_ms", None, boot).chosen for runs in (before, after)]
    except RecevalError as error:
        note = str(error).splitlines()[0]
    return LabelAgreement(metric, tau, means_a.tolist(), means_b.tolist(), int(np.argmax(means_a)),
                          int(np.argmax(means_b)), chosen[0], chosen[1], note, what)


def ppi_intervals(judged: list[Run], human: list[Run], labelled: set[str], metric: str, level: float) -> list[PpiInterval]:
    """Per run, the mean of ``metric`` under the person's labels by prediction-powered
    inference (:func:`receval.stats.ppi.ppi_mean`): ``judged`` re-scored with the judge's
    labels (every question), ``human`` with the person's, who labelled the questions
    ``labelled``."""
    out = []
    for by_judge, by_human in zip(judged, human):
        f, y = by_judge.values(metric), by_human.values(metric)
        mine = np.asarray([q in labelled for q in by_judge.ids]) & np.isfinite(f) & np.isfinite(y)
        rest = ~np.asarray([q in labelled for q in by_judge.ids]) & np.isfinite(f)
        if mine.sum() < 2 or not rest.any():
            raise RecevalError(
                f"--human: {int(mine.sum())} questions carry both labels and {int(rest.sum())} the judge's alone; "
                "prediction-powered inference needs at least 2 and 1"
            )
        out.append(ppi_mean(y[mine], f[mine], f[rest], level=level))
    return out


def ppi_lines(intervals: list[PpiInterval], labels: list[str], metric: str) -> list[str]:
    if not intervals:
        return []
    first = intervals[0]
    lines = [f"{measure_label(metric)} under the person's labels by prediction-powered inference "
             f"({first.n_labelled} questions labelled by both, {first.n_unlabelled} by the judge alone):"]
    for i, (found, label) in enumerate(zip(intervals, labels)):
        mean, lo, hi = found.classical
        lines.append(f"  #{i} {label}: {found.estimate:.3f} [{found.lo:.3f}, {found.hi:.3f}] (lambda {found.lam:.2f}); "
                     f"the person's labels alone {mean:.3f} [{lo:.3f}, {hi:.3f}]")
    return lines
