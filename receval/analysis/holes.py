"""Judgment holes: how much of what the runs shown retrieved carries a label at all.

A run is scored only on the units its labels know; an unlabelled unit counts as not
relevant. When the labels cover little of a run's top k (a synthetic question set
labels one passage per question), its scores measure agreement with those few labels,
and a run that retrieves many unlabelled units is punished for them whether they
answer the question or not. The report says so, from the stored ``judged@k`` column
(:mod:`receval.scoring.measures`), but only when the unlabelled units could change the
comparison shown: for two runs
a above b on the report's measure, b has a larger share of unlabelled units in its
top k (``1 - judged@k`` at the largest k the runs store) than a leads it by, so that
labelling them could reverse the order (without a measure: the shares differ by more
than :data:`UNJUDGED_GAP`, 0.2). Both are paired over the questions the two runs hold:
b's extra share must exceed :data:`NOISE_SE` standard errors of its per-question
difference, and a's lead plus that many standard errors of the lead, so that labelling
could move b past a by more than the noise in their difference (0.01 more unlabelled
against a 0.009 lead whose interval spans 0.1 is no comparison labels could change, and a
note that fires on noise teaches users to skip notes). One run, or runs equally well or badly judged, get no
note: a low judged@k alone (every BEIR run, a synthetic set labelling one passage per
question) is no reason to doubt an order it affects alike.

The remedy is to pool and judge what the runs retrieved (``receval pool``,
``receval judge``) and re-score (``report --labels``, :func:`relabel`); with
``--agreement``, :func:`label_agreement` says whether the added labels change the
order of the runs, the winner, or ``select``'s choice. After the labels of a budgeted
pool the measures are estimated, an undrawn unit standing for the drawn ones of its
stratum: the note then speaks only of a top k below the depth the sample was drawn from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from receval.analysis.choice import choose
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError
from receval.scoring.declared import measure_label
from receval.analysis.estimate import Estimation, estimate_runs
from receval.results import support as nugget_support
from receval.results.judgments import Conflict, Labels, merge_added, read_label_file, rescore, stored_labels
from receval.results.stored import Run
from receval.stats.concordance import Concordance, tau_interval
from receval.stats.ppi import PpiInterval, ppi_mean

UNJUDGED_GAP = 0.2
NOISE_SE = 2.0  # standard errors a paired difference of unlabelled shares must exceed


def _paired(a: Run, b: Run, column: str) -> tuple[float, float]:
    """Mean and standard error of a's minus b's ``column`` over the questions both hold
    (NaN, NaN with fewer than two)."""
    _, ia, ib = np.intersect1d(a.ids.astype(str), b.ids.astype(str), return_indices=True)
    diff = a.values(column)[ia] - b.values(column)[ib]
    diff = diff[np.isfinite(diff)]
    if diff.size < 2:
        return float("nan"), float("nan")
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(diff.size))


def _could_reverse(a: Run, b: Run, column: str, metric: str | None) -> bool:
    """b's extra unlabelled share (judged_a - judged_b) is beyond :data:`NOISE_SE`
    standard errors, and larger than a's lead plus that many standard errors of the
    lead: labelling the units could move b past a by more than their difference's noise."""
    extra, extra_se = _paired(a, b, column)
    if not extra > NOISE_SE * extra_se:
        return False
    if metric is None:
        return True
    lead, lead_se = _paired(a, b, metric)
    return bool(extra > lead + NOISE_SE * lead_se)


def judged_column(runs: list[Run]) -> str | None:
    """The ``judged@k`` column every run holds, at the largest such k (None: a run made
    before the column existed lacks it)."""
    shared = None
    for run in runs:
        ks = {int(name.split("@")[1]) for name in run.table.column_names if name.startswith("judged@")}
        shared = ks if shared is None else shared & ks
    return f"judged@{max(shared)}" if shared else None


def judged_cautions(runs: list[Run], labels: list[str], metric: str | None = None, sampled: bool = False,
                    sample_depth: int | None = None) -> list[str]:
    """The report's note on judgment holes, only when they could change the comparison
    shown (see the module docstring); none for one run, for runs without ``judged@k``,
    or when no pair's order could turn on the unlabelled units.

    After a judged sample (``sampled``: a budgeted pool's labels, the measures
    estimated), an undrawn unit the pool held counts through the drawn ones of its
    stratum, not as not relevant, so a top k within the pool's ``sample_depth`` gets no
    note (the runs shown taken to be the runs pooled, as a depth pool's note takes
    them); a top k below it is named, with the pool that reaches it."""
    column = judged_column(runs)
    if column is None or len(runs) < 2:
        return []
    k = column.split("@")[1]
    if sampled and sample_depth is not None and int(k) <= sample_depth:
        return []
    means = np.array([np.nanmean(run.values(column)) if run.table.num_rows else np.nan for run in runs])
    scores = (np.array([np.nanmean(run.values(metric)) if run.table.num_rows else np.nan for run in runs])
              if metric and all(metric in run.table.column_names for run in runs) else np.zeros(len(runs)))
    if not (np.isfinite(means).all() and np.isfinite(scores).all()):
        return []
    # pairs (a above b) where b has more of its top k unlabelled than a leads it by
    extra = means[:, None] - means[None, :]  # [a, b]: b's unlabelled share minus a's
    gap = scores[:, None] - scores[None, :]
    could = (gap >= 0) & (extra > np.maximum(gap, UNJUDGED_GAP if metric is None else 0.0)) & (extra > 0)
    for i, j in zip(*np.nonzero(could)):
        could[i, j] = _could_reverse(runs[i], runs[j], column, metric)
    if not could.any():
        return []
    a, b = np.unravel_index(np.argmax(np.where(could, extra - gap, -np.inf)), could.shape)
    lead = f"#{a} leads it by {gap[a, b]:.3f} on {measure_label(metric)}, but " if metric else ""
    head = (f"#{b} {labels[b]} has more of its top {k} unlabelled than #{a} {labels[a]} ({1 - means[b]:.2f} vs "
            f"{1 - means[a]:.2f}): {lead}")
    if sampled:
        below = f"below the pool's depth {sample_depth}" if sample_depth is not None else "the pool never held"
        return [head + f"the judged sample's estimates count its units {below} as not relevant, which could reverse "
                f"the order; draw the sample from the top {k} (receval pool RUNS --budget N --depth {k}), judge it "
                "and re-score with --labels"]
    return [head + "labelling those units could reverse the order; pool and judge them "
            "(receval pool RUNS --out pool.jsonl, then receval judge pool=pool.jsonl) and re-score with --labels"]


# ----------------------------------------------------------------- added labels (report --labels)


UNANSWERABLE = "unanswerable"  # the question kind a dataset marks as having no answer (receval.datasets.types)
SHOWN = 5  # ids named in a note before "(and N more)"


def _named(items: list[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


@dataclass
class LabelAccount:
    """What became of each added label (one (question, unit) pair, counted once)."""

    given: int = 0  # pairs the files label
    applied: int = 0  # new pairs merged onto the stored labels
    already: int = 0  # pairs the runs already store with that grade
    conflicts: int = 0  # pairs the runs store with another grade (the stored one kept)
    unknown_questions: list[str] = field(default_factory=list)  # question ids no run has
    unknown_units: list[str] = field(default_factory=list)  # "question unit" pairs whose unit no run retrieved or labels
    unanswerable: list[str] = field(default_factory=list)  # questions the dataset marks unanswerable, labelled relevant
    support: int = 0  # nugget support labels naming a stored question's nugget (receval.results.support)

    def lines(self) -> list[str]:
        """One line per kind of label not applied, naming the ids."""
        out = []
        if self.unknown_questions:
            out.append(f"{len(self.unknown_questions)} question ids no run has, their labels not applied: "
                       f"{_named(self.unknown_questions)}")
        if self.unknown_units:
            out.append(f"{len(self.unknown_units)} labels name units no run retrieved or labels (a typo, or "
                       f"another collection's ids), not applied: {_named(self.unknown_units)} (--unknown-units "
                       "apply applies them, e.g. a complete qrels file)")
        if self.unanswerable:
            out.append(f"{len(self.unanswerable)} unanswerable questions labelled relevant, not applied (the "
                       f"dataset says they have no answer): {_named(self.unanswerable)}")
        return out


def account(runs: list[Run], added: Labels, unknown_units: str = "skip") -> tuple[Labels, LabelAccount]:
    """The labels of ``added`` that can apply to ``runs``, and the account of every one.

    Not applied, each named: a question no run has; a unit no run retrieved (for any
    question) and no run labels, which would count as a relevant unit nobody found and
    lower recall (``unknown_units="apply"`` applies them, e.g. a collection's full qrels);
    a relevant grade on a question of kind ``unanswerable`` that stores no relevant label."""
    questions: set[str] = set()
    units: set[str] = set()
    stored: dict[str, dict[str, int]] = {}
    unanswerable: set[str] = set()
    for run in runs:
        questions.update(run.ids)
        for ranked in run.table.column("retrieved").to_pylist():
            units.update(ranked or ())
        for qid, labels in stored_labels(run).items():
            units.update(labels)
            for uid, grade in labels.items():
                stored.setdefault(qid, {}).setdefault(uid, grade)
        unanswerable.update(q for q, kind in zip(run.ids, run.strings("kind")) if kind == UNANSWERABLE)
    unanswerable -= {q for q, labels in stored.items() if labels}
    found = LabelAccount()
    usable: Labels = {}
    for qid, labels in added.items():
        found.given += len(labels)
        if qid not in questions:
            found.unknown_questions.append(qid)
            continue
        if qid in unanswerable and any(g >= 1 for g in labels.values()):
            found.unanswerable.append(qid)
            continue
        for uid, grade in labels.items():
            if uid not in units and unknown_units != "apply":
                found.unknown_units.append(f"{qid} {uid}")
                continue
            before = stored.get(qid, {}).get(uid)
            if before is None:
                found.applied += 1
            elif before == grade:
                found.already += 1
            else:
                found.conflicts += 1
            usable.setdefault(qid, {})[uid] = grade
    return usable, found


@dataclass
class Relabelled:
    """The runs re-scored with added labels, and what the labels said."""

    runs: list[Run]
    files: list[str]
    n_added: int  # (question, unit) pairs the files label
    conflicts: list[Conflict]  # stored labels the files contradict (kept; each pair once)
    questions: set[str] = field(default_factory=set)  # questions the files label (and that the runs have)
    account: LabelAccount = field(default_factory=LabelAccount)
    estimation: Estimation | None = None  # a judged sample: the measures are estimated (receval.analysis.estimate)
    depths: list[int] = field(default_factory=list)  # the depths of the depth pools the labels came from
    sample_depth: int | None = None  # the depth a judged sample was drawn from (its records' ``depth``)

    def cautions(self) -> list[str]:
        if self.estimation is not None:
            return self.estimation.cautions() + self.account.lines()
        files = ", ".join(self.files)
        found = self.account
        already = f"; {found.already} already stored with that grade" if found.already else ""
        support = f"; {found.support} nugget support labels applied" if found.support else ""
        notes = [f"re-scored with {found.applied} of the {found.given} added labels from {files} (stored runs "
                 f"unchanged){already}{support}"]
        for depth in self.depths:
            notes.append(f"labels of a depth-{depth} pool decide hit@k and precision@k for k <= {depth} for the runs "
                         f"pooled; recall, AP and nDCG still count the relevant units below {depth} as not relevant "
                         "(receval pool --budget N samples deeper and estimates them)")
        if self.conflicts:
            shown = "; ".join(c.line() for c in self.conflicts[:5])
            more = f" (and {len(self.conflicts) - 5} more)" if len(self.conflicts) > 5 else ""
            notes.append(f"{len(self.conflicts)} added labels contradict stored ones and were not applied: {shown}{more}")
        return notes + found.lines()


def relabel(runs: list[Run], files: list[str], option: str = "--labels", unknown_units: str = "skip") -> Relabelled:
    """Every run re-scored from its stored ranking with the labels of ``files`` merged onto
    its stored labels (:func:`receval.results.judgments.rescore`), after :func:`account`
    keeps the labels that can apply. None applying is an error (exit 2), naming why.
    When a file holds a judged sample (a budgeted pool's labels), the measures are
    estimated from it instead (:func:`receval.analysis.estimate.estimate_runs`)."""
    read = [(f, read_label_file(f, option)) for f in files]
    sampled = [(f, found.sampled) for f, found in read if found.sampled]
    merged = merge_added([(f, found.certain) for f, found in read], option)
    depths = sorted({d for _, found in read for d in found.depths})
    added, found = account(runs, merged, unknown_units)
    if sampled:
        if len(sampled) > 1:
            raise RecevalError(f"{option}: {' and '.join(f for f, _ in sampled)} each hold a judged sample; estimate "
                               "from one sample at a time (the others' labels may join it as plain labels)")
        estimated, estimation = estimate_runs(runs, sampled[0][1], added, [f for f, _ in sampled])
        found.given += len(sampled[0][1])
        reach = [r["depth"] for r in sampled[0][1] if isinstance(r.get("depth"), int) and not isinstance(r["depth"], bool)]
        return Relabelled(estimated, list(files), found.given, [], {r["question_id"] for r in sampled[0][1]}, found,
                          estimation, sample_depth=min(reach) if reach else None)
    support = nugget_support.merge([nugget_support.read_support(f) for f in files if Path(f).suffix == ".jsonl"])
    found.support = max(nugget_support.applicable(run.table, support) for run in runs) if support else 0
    if found.applied == 0 and found.support == 0:
        why = "; ".join(found.lines()) or (
            "every one is already stored with that grade or contradicts a stored one" if found.given
            else nugget_support.why_none_apply([run.table for run in runs], support) if support
            else "the files hold no label")
        what = f"none of the {found.given} labels" if found.given or not support else "nothing"
        raise RecevalError(f"{option}: {what} in {', '.join(files)} applies to these runs: "
                           f"{why}; give labels for these runs' questions (receval pool, receval.judge)")
    out, conflicts = [], {}
    for run in runs:
        rescored, seen = rescore(run, added, ", ".join(files), support)
        out.append(rescored)
        conflicts.update({(c.question_id, c.id): c for c in seen})
    return Relabelled(out, list(files), found.given, list(conflicts.values()),
                      {q for q, units in added.items() if units}, found, depths=depths)


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
    changed: int = 1  # questions whose value changed in some run; 0: the labels changed nothing measured
    only_added: int = 0  # questions scored under the added labels alone (no value under the stored): not in tau

    def lines(self, labels: list[str]) -> list[str]:
        t = self.tau
        name = measure_label(self.metric)
        left_out = (f"; {self.only_added} more questions have {name} only under the added labels and are left out"
                    if self.only_added else "")
        if not self.changed:
            return [f"Ranking of {len(labels)} runs by {name}, {self.before} vs stored + added: the added labels "
                    f"changed no run's {name} on any of the {t.n_questions} questions scored under both{left_out}; "
                    "nothing was compared (label holes the runs retrieved would: receval pool, receval.judge)"]
        out = [
            f"Ranking of {len(labels)} runs by {name}, {self.before} vs stored + added: "
            f"Kendall tau {t.tau:.3f} [{t.lo:.3f}, {t.hi:.3f}] ({t.level:.0%} bootstrap over {t.n_questions} "
            f"questions scored under both, {self.changed} of them changed{left_out})",
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
            "metric": self.metric, "versus": self.before,  # tau is None when the labels changed nothing measured
            "kendall_tau": self.tau.tau if self.changed else None,
            "ci": [self.tau.lo, self.tau.hi] if self.changed else None,
            "level": self.tau.level, "n_questions": self.tau.n_questions,
            "means_before": self.means_before, "means_added": self.means_after,
            "winner_before": labels[self.winner_before], "winner_added": labels[self.winner_after],
            "winner_changed": self.winner_before != self.winner_after,
            "choice_before": None if self.chosen_before is None else labels[self.chosen_before],
            "choice_added": None if self.chosen_after is None else labels[self.chosen_after],
            "choice_changed": self.chosen_before != self.chosen_after,
            "questions_changed": self.changed, "questions_only_added": self.only_added,
        }


def _aligned(before: list[Run], after: list[Run], metric: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(Q, R) per-question values of every run under both label sets, on the questions
    every run scores under both; and how many more every run scores under ``after`` alone."""
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
    only_after = ~np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    return a[keep], b[keep], int(only_after.sum())


def label_agreement(
    before: list[Run], after: list[Run], metric: str, boot: BootstrapConfig, what: str = "stored labels"
) -> LabelAgreement:
    """Kendall tau (with its bootstrap interval) between the runs' order under the stored
    labels and under stored + added, the winner under each, and ``select``'s choice
    under each (:func:`receval.analysis.choice.choose` with select's defaults)."""
    if len(before) < 2:
        raise RecevalError("--agreement: give at least two runs; it compares how label sets rank runs")
    a, b, only_added = _aligned(before, after, metric)
    if a.shape[0] < 2:
        raise RecevalError(f"--agreement: fewer than two questions are scored on {metric} by every run")
    tau = tau_interval(a, b, boot.n_resamples, boot.seed, boot.level)
    means_a, means_b = a.mean(axis=0), b.mean(axis=0)
    chosen, note = [None, None], ""
    try:
        chosen = [choose(runs, metric, "p50_ms", None, boot).chosen for runs in (before, after)]
    except RecevalError as error:
        note = str(error).splitlines()[0]
    changed = int((a != b).any(axis=1).sum())
    return LabelAgreement(metric, tau, means_a.tolist(), means_b.tolist(), int(np.argmax(means_a)),
                          int(np.argmax(means_b)), chosen[0], chosen[1], note, what, changed, only_added)


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
