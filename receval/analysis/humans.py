"""Human labels where they count: a person's sample of a judge's labels, drawn by the
judge's own grade, and what it certifies.

Stratifying the validation sample by the judge's grade puts the person's effort where
the judge errs: a grade the judge gives reliably needs few checks, one it gives loosely
many (Merlo et al. 2026 report up to 85% less human effort at the same guarantee).

- :func:`draw_for_humans` (``receval pool --for-humans N --stratify judge``): strata are
  the judge's grades over the pairs it labelled; N draws allocated by Neyman (n_g
  proportional to N_g S_g, at least 2 each: :func:`receval.stats.sampling.neyman`), S_g
  the spread of the known grade among the pairs the judge graded g in its agreement
  file (:func:`grade_spreads`); each drawn pair records its ``inclusion`` n_g / N_g,
  ``stratum`` and ``drawn``.
- :func:`stratified_ppi` (``report --labels JUDGE --human PERSON`` when the person's
  labels carry that design): per run, the mean of ``--metric`` under the person's labels
  by the prediction-powered difference estimator on every unit (the judge's grade,
  corrected by (person - judge) / inclusion where drawn:
  :func:`receval.stats.estimators.working_ppi`), beside the person's sample alone
  (Horvitz-Thompson), each with its interval over the draw (Rao-Wu replicates); for
  precision@k (unbiased, :data:`CORRECTED`); the ratios are refused.
- :func:`certify` (``report --agreement``): how many human labels pin the judge's error
  rate to +- a stated precision, drawn uniformly and drawn by its grade
  (:func:`receval.stats.sampling.labels_needed`).

The confusion (known grade by judged grade) comes from the judge's agreement file: its
``reference`` comparison when the judge job had one (the holes themselves), else its
calibration sample. Calibration pairs are stored labels, which are relevant ones: their
spread within the judge's grade 0 is that of the relevant units it missed, so a
reference with its grade-0 judgements (``reference_missing=zero``) allocates better.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from receval.analysis.estimate import effective, known_labels, ranked_units
from receval.core.errors import RecevalError
from receval.scoring.declared import measure_label, parse_measure
from receval.results.judgments import Labels
from receval.results.stored import Run
from receval.stats.estimators import ESTIMATED, design_intervals, working_ppi, working_sample
from receval.stats.sampling import labels_needed, neyman

MAX_AGREEMENT_BYTES = 16 << 20  # a judge's agreement file is a few kilobytes
#: Measures the prediction-powered working values correct: sums over ranks (precision).
#: ap, recall and ndcg divide by a per-question count or ideal DCG that the signed
#: corrections (y - f) / pi can drive to zero or below, so their estimate can leave [0, 1]
#: (nDCG@10 -1.012 [-1.557, -0.466] against 0.751 with a gullible judge and 40 labels).
CORRECTED = ("precision",)


def agreement_file(labels: str | Path) -> Path:
    return Path(f"{labels}.agreement.json")


def read_confusion(labels: str | Path, option: str) -> tuple[list[int], np.ndarray, str] | None:
    """(grades, matrix rows known x columns judged, its source) from the agreement file
    ``receval judge`` wrote beside ``labels``: its reference comparison, else its
    calibration; None when there is none."""
    path = agreement_file(labels)
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_AGREEMENT_BYTES:
        raise RecevalError(f"{option}: {path} is larger than a judge's agreement file ({MAX_AGREEMENT_BYTES} bytes)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RecevalError(f"{option}: {path} is not the agreement file receval judge writes ({error})") from None
    for key, source in (("reference", "the reference labels"), ("calibration", "the calibration sample")):
        found = summary.get(key) if isinstance(summary, dict) else None
        if isinstance(found, dict) and found.get("n"):
            try:
                grades = [int(g) for g in found["categories"]]
                matrix = np.asarray(found["matrix"], dtype=np.int64).reshape(len(grades), len(grades))
            except (KeyError, TypeError, ValueError):
                raise RecevalError(f"{option}: {path}: its {key} agreement has no confusion matrix") from None
            return grades, matrix, source
    return None


def grade_spreads(grades: list[int], matrix: np.ndarray, judged: list[int]) -> np.ndarray:
    """Per judge grade in ``judged``: the standard deviation of the known grade among the
    pairs the judge graded so (at least 2 pairs), else over every pair."""
    known = np.asarray(grades, dtype=np.float64)

    def spread(counts: np.ndarray) -> float:
        mean = (counts * known).sum() / counts.sum()
        return float(np.sqrt((counts * (known - mean) ** 2).sum() / counts.sum()))

    overall = spread(matrix.sum(axis=1))
    out = []
    for g in judged:
        column = matrix[:, grades.index(g)] if g in grades else np.zeros(len(grades))
        out.append(spread(column) if column.sum() >= 2 else overall)
    return np.asarray(out)


def draw_for_humans(judged: list[tuple[str, str, int]], spreads: dict[int, float], n: int, seed: int) -> list[dict]:
    """The person's sample: ``judged`` (question, unit, judge grade) pairs stratified by
    grade, Neyman-allocated by ``spreads``, drawn without replacement (seeded): one
    record per drawn pair with its judge grade and design fields."""
    if n < 1:
        raise RecevalError(f"--for-humans {n}: give the number of pairs a person will label, >= 1")
    grades = sorted({g for _, _, g in judged})
    members = {g: [i for i, (_, _, grade) in enumerate(judged) if grade == g] for g in grades}
    sizes = np.asarray([len(members[g]) for g in grades])
    allocation = neyman(sizes, np.asarray([spreads[g] for g in grades]), n)
    rng = np.random.default_rng(seed)
    out = []
    for g, size, k in zip(grades, sizes, allocation):
        for i in sorted(rng.choice(members[g], size=int(k), replace=False)):
            qid, uid, grade = judged[i]
            out.append({"question_id": qid, "id": uid, "judge_grade": grade, "inclusion": float(k / size),
                        "stratum": grades.index(g), "drawn": int(k), "design": "humans"})
    return out


@dataclass(frozen=True)
class StratifiedPpi:
    """A run's mean of a measure under the person's labels: prediction-powered, and from
    the person's sample alone, each with its interval over the draw."""

    estimate: float
    lo: float
    hi: float
    alone: tuple[float, float, float]  # the person's sample alone: mean, lo, hi
    n_labelled: int  # pairs the person labelled
    n_judged: int  # pairs the judge labelled


def stratified_ppi(runs: list[Run], judged: Labels, human: list[dict], metric: str, level: float,
                   n_resamples: int, seed: int) -> list[StratifiedPpi]:
    """Per run (module docstring): ``judged`` the judge's labels (the population drawn
    from), ``human`` the person's labelled records of the stratified sample."""
    if parse_measure(metric).family not in CORRECTED:
        family = parse_measure(metric).family
        raise RecevalError(
            f"--human: a sample of pairs corrects precision@k; {measure_label(metric)} "
            + ("divides by each question's ideal DCG, which a few corrected pairs per question can drive to zero or "
               "below (its estimate can leave [0, 1])" if family == "ndcg" else
               "divides by each question's number of relevant units, which a few corrected pairs per question leave "
               "too uncertain (its working value can be negative)" if family in ESTIMATED
               else "needs every unit above a rank labelled") + ": give --metric precision@10")
    questions = list(dict.fromkeys(q for run in runs for q in run.ids))
    qindex = {q: i for i, q in enumerate(questions)}
    known = known_labels(runs, {})
    drawn, n_drawn, n_graded, _ = effective(human, known)
    person = {(r["question_id"], r["id"]): r for r in drawn}
    missing = [k for k in person if k[1] not in judged.get(k[0], {})]
    if missing:
        raise RecevalError(f"--human: {len(missing)} of the person's pairs are not among the judge's labels "
                           f"({missing[0][0]} {missing[0][1]}): draw them with receval pool --for-humans N "
                           "--judged JUDGE_LABELS from the labels given to --labels")
    units: dict[tuple[str, str], int] = {}
    rows = []  # question, judge grade, person grade, inclusion, stratum
    for qid, labels in known.items():
        for uid, grade in labels.items():
            if qid in qindex:
                units[qid, uid] = len(rows)
                rows.append((qindex[qid], grade, grade, 1.0, -1))
    n_known = len(rows)
    for qid, labels in judged.items():
        for uid, grade in labels.items():
            if qid in qindex and (qid, uid) not in units:
                record = person.get((qid, uid))
                units[qid, uid] = len(rows)
                rows.append((qindex[qid], grade, record["grade"] if record else grade,
                             record["inclusion"] if record else 1.0, record["stratum"] if record else -1))
    table = np.asarray(rows, dtype=np.float64).reshape(-1, 5)
    top = max(int(table[:, 1:3].max(initial=1)), 1)
    ranked = ranked_units(runs, qindex, units)
    scored = np.zeros((len(runs), len(questions)), dtype=bool)
    for i, run in enumerate(runs):
        answered = np.isfinite(run.values(metric)) if metric in run.table.column_names else np.ones(len(run.ids), bool)
        scored[i, [qindex[q] for q, ok in zip(run.ids, answered) if ok]] = True
    powered = working_ppi(table[:, 0], table[:, 1], table[:, 2], table[:, 3], table[:, 4], len(questions), top)
    keep = (table[:, 4] >= 0) | (np.arange(len(rows)) < n_known)  # the person's sample alone: drawn + stored
    alone = working_sample(table[keep, 0], table[keep, 2], table[keep, 3], table[keep, 4], len(questions), top)
    position = -np.ones(len(rows), dtype=np.int64)
    position[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
    with_ppi = design_intervals(powered, ranked, [metric], {metric: scored}, level, n_resamples, seed)[metric]
    by_person = design_intervals(alone, np.where(ranked >= 0, position[np.maximum(ranked, 0)], -1), [metric],
                                 {metric: scored}, level, n_resamples, seed)[metric]
    return [StratifiedPpi(p.estimate, p.lo, p.hi, (a.estimate, a.lo, a.hi), n_graded,
                          sum(len(v) for v in judged.values())) for p, a in zip(with_ppi, by_person)]


def stratified_lines(found: list[StratifiedPpi], labels: list[str], metric: str, level: float) -> list[str]:
    if not found:
        return []
    first = found[0]
    out = [f"{measure_label(metric)} under the person's labels, prediction-powered from a sample stratified by the "
           f"judge's grade ({first.n_labelled} pairs labelled by the person, {first.n_judged} by the judge; "
           f"{level:.0%} intervals over the draw):"]
    for i, (p, label) in enumerate(zip(found, labels)):
        mean, lo, hi = p.alone
        out.append(f"  #{i} {label}: {p.estimate:.3f} [{p.lo:.3f}, {p.hi:.3f}]; the person's sample alone "
                   f"{mean:.3f} [{lo:.3f}, {hi:.3f}]")
    return out


@dataclass(frozen=True)
class Certify:
    """Human labels that pin the judge's error rate to +- ``precision``."""

    precision: float
    level: float
    uniform: int
    stratified: int
    error_rate: float  # the judge's error rate over its labels, from the confusion
    source: str

    def line(self) -> str:
        return (f"to certify the judge's error rate ({self.error_rate:.2f} by {self.source}) to +-{self.precision:g} "
                f"({self.level:.0%}): {self.uniform} human labels drawn uniformly from its labels, "
                f"{self.stratified} drawn by its grade (receval pool --for-humans N --stratify judge)")

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def certify(judged: Labels, confusion: tuple[list[int], np.ndarray, str], precision: float, level: float) -> Certify:
    """Labels needed (module docstring): strata the judge's grades over its labels, each
    grade's errors (known relevance differing from the judged) among the pairs the
    ``confusion`` has it grade so (every pair's, for a grade with fewer than 2), smoothed
    and floored by :func:`receval.stats.sampling.labels_needed`."""
    if not 0 < precision < 1:
        raise RecevalError(f"--precision {precision}: give the half-width to certify, between 0 and 1 (e.g. 0.05)")
    grades, matrix, source = confusion
    known_relevant = np.asarray(grades) >= 1
    counts: dict[int, int] = {}
    for labels in judged.values():
        for grade in labels.values():
            counts[int(grade)] = counts.get(int(grade), 0) + 1
    wrong = (known_relevant[:, None] != known_relevant[None, :]) * matrix  # [known, judged]
    errors, checked = np.zeros(len(counts)), np.zeros(len(counts))
    for i, g in enumerate(counts):
        column = grades.index(g) if g in grades else None
        own = column is not None and matrix[:, column].sum() >= 2
        errors[i] = wrong[:, column].sum() if own else wrong.sum()
        checked[i] = matrix[:, column].sum() if own else matrix.sum()
    sizes = np.asarray(list(counts.values()))
    uniform, stratified = labels_needed(sizes, errors, checked, precision, level)
    rate = float((sizes * errors / np.maximum(checked, 1)).sum() / max(sizes.sum(), 1))
    return Certify(precision, level, uniform, stratified, rate, source)


def human_pool(runs: list[Run], judged_path: str, n: int, seed: int) -> tuple[list[dict], list[str]]:
    """The records of ``pool --for-humans N --stratify judge --judged JUDGE.jsonl``: the
    judge's labels on these runs' questions, drawn by :func:`draw_for_humans` with the
    spreads of its agreement file; and a line saying how the draw was allocated."""
    from receval.results.judgments import read_label_file

    labels, sampled, _ = read_label_file(judged_path, "--judged")
    if sampled:
        raise RecevalError(f"--judged {judged_path}: these are labels of a sampled pool; draw the person's sample "
                           "from a judge's labels of a whole pool (receval pool RUNS --depth D)")
    confusion = read_confusion(judged_path, "--judged")
    if confusion is None:
        raise RecevalError(f"--judged {judged_path}: no agreement file beside it ({agreement_file(judged_path)}) with a "
                           "calibration or reference comparison: judge a pool made with --calibrate N (or give the "
                           "judge reference=LABELS) so the spread of each grade is known")
    questions = {q: text for run in runs for q, text in zip(run.ids, run.strings("question"))}
    pairs = [(q, u, int(g)) for q, units in labels.items() if q in questions for u, g in units.items()]
    if not pairs:
        raise RecevalError(f"--judged {judged_path}: none of its labels is for these runs' questions")
    grades, matrix, source = confusion
    judged_grades = sorted({g for _, _, g in pairs})
    spreads = dict(zip(judged_grades, grade_spreads(grades, matrix, judged_grades)))
    records = draw_for_humans(pairs, spreads, n, seed)
    for record in records:
        record["question"] = questions[record["question_id"]] or ""
    allocation = ", ".join(f"grade {g}: {sum(r['judge_grade'] == g for r in records)} of "
                           f"{sum(p[2] == g for p in pairs)} (spread {spreads[g]:.2f})" for g in judged_grades)
    return records, [f"drawn by the judge's grade, Neyman-allocated by the spread of {source}: {allocation}"]


def human_sample(files: list[str]) -> list[dict] | None:
    """The person's labelled records when ``--human`` holds a sample drawn by
    ``pool --for-humans`` (one file; None when the files are plain labels)."""
    from receval.results.judgments import read_label_file

    found = [(f, read_label_file(f, "--human").sampled) for f in files]
    sampled = [(f, records) for f, records in found if records]
    if not sampled:
        return None
    if len(found) > 1:
        raise RecevalError(f"--human: {sampled[0][0]} holds a stratified sample; give it alone (one --human)")
    return sampled[0][1]


def judge_labels(files: list[str]) -> Labels:
    """The judge's labels (``--labels``), merged: the population a person's sample was drawn from."""
    from receval.results.judgments import merge_added, read_label_file

    return merge_added([(f, read_label_file(f, "--labels").certain) for f in files], "--labels")


def certifications(files: list[str], precision: float, level: float) -> list[Certify]:
    """:func:`certify` for each ``--labels`` file with a judge's agreement file beside it."""
    from receval.results.judgments import read_label_file

    out = []
    for f in files:
        confusion = read_confusion(f, "--labels")
        if confusion is not None:
            out.append(certify(read_label_file(f, "--labels").certain, confusion, precision, level))
    return out
