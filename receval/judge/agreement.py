"""A judge's agreement with known labels: Cohen's kappa and the confusion matrix.

kappa = (p_o - p_e) / (1 - p_e), p_o the observed share of agreement and p_e the share
expected by chance from each rater's own marginals (Cohen 1960); weighted kappa
replaces agreement by 1 - w_ij with linear weights w_ij = |i - j| / (K - 1)
(Cohen 1968), the form statsmodels' ``cohens_kappa(table, wt="linear")`` computes.
``binary`` compares relevant (grade >= 1) against not; ``graded`` compares the grades
themselves (unweighted and linearly weighted). Kappa is undefined (None) when chance
agreement is 1: every known label and every judgement in one class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def confusion(known: np.ndarray, judged: np.ndarray, categories: list[int]) -> np.ndarray:
    """Counts: rows the known grade, columns the judge's, in ``categories`` order."""
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)), dtype=np.int64)
    np.add.at(table, ([index[int(k)] for k in known], [index[int(j)] for j in judged]), 1)
    return table


def kappa(table: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa of a square confusion table; ``weights="linear"`` for weighted kappa."""
    table = np.asarray(table, dtype=np.float64)
    n = table.sum()
    k = table.shape[0]
    if n == 0 or k < 2:
        return None
    i, j = np.indices(table.shape)
    w = np.abs(i - j) / (k - 1) if weights == "linear" else (i != j).astype(np.float64)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    disagreement_expected = (w * expected).sum()
    if disagreement_expected == 0:
        return None
    return float(1.0 - (w * table).sum() / disagreement_expected)


@dataclass(frozen=True)
class Agreement:
    n: int
    categories: list[int]
    matrix: list[list[int]]  # rows known grade, columns judged grade
    kappa_binary: float | None
    kappa_graded: float | None
    kappa_linear: float | None
    accuracy_binary: float | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def lines(self, what: str) -> list[str]:
        def shown(value):
            return "undefined (one class only)" if value is None else f"{value:.3f}"

        head = [f"agreement with {what}: {self.n} pairs; Cohen's kappa binary {shown(self.kappa_binary)}, "
                f"graded {shown(self.kappa_graded)}, graded linear-weighted {shown(self.kappa_linear)}"]
        if self.n:
            head.append("  known \\ judged " + " ".join(f"{c:>5}" for c in self.categories))
            head += [f"  {c:>14} " + " ".join(f"{v:>5}" for v in row) for c, row in zip(self.categories, self.matrix)]
        return head


def agreement(known: list[int], judged: list[int]) -> Agreement:
    """Agreement of ``judged`` grades with ``known`` ones, pair by pair."""
    known_a, judged_a = np.asarray(known, dtype=np.int64), np.asarray(judged, dtype=np.int64)
    categories = sorted({*known_a.tolist(), *judged_a.tolist()})
    table = confusion(known_a, judged_a, categories)
    binary = confusion(known_a >= 1, judged_a >= 1, [0, 1])
    return Agreement(
        n=int(known_a.size), categories=categories, matrix=table.tolist(),
        kappa_binary=kappa(binary), kappa_graded=kappa(table), kappa_linear=kappa(table, "linear"),
        accuracy_binary=float(np.mean((known_a >= 1) == (judged_a >= 1))) if known_a.size else None,
    )


@dataclass(frozen=True)
class LengthBand:
    """Agreement on the calibration pairs whose passage length falls in one band."""

    words: tuple[int, int]  # shortest and longest passage in the band, in words
    n: int
    accuracy_binary: float  # relevant (grade >= 1) agreed
    over: float  # share judged above the known grade
    under: float  # share judged below it
    mean_error: float  # mean of judged minus known grade

    def to_dict(self) -> dict:
        return dict(self.__dict__, words=list(self.words))


def by_length(known: list[int], judged: list[int], words: list[int], bands: int = 3) -> list[LengthBand]:
    """Agreement in ``bands`` bands of passage length (equal counts, by words): an LLM
    judge's over-rating grows with length (Yu et al., SIGIR 2026), which one overall
    kappa hides. Fewer bands when there are fewer pairs; none without pairs."""
    known_a, judged_a = np.asarray(known, dtype=np.int64), np.asarray(judged, dtype=np.int64)
    words_a = np.asarray(words, dtype=np.int64)
    if known_a.size == 0:
        return []
    order = np.argsort(words_a, kind="stable")
    out = []
    for part in np.array_split(order, min(bands, known_a.size)):
        k, j = known_a[part], judged_a[part]
        out.append(LengthBand(
            words=(int(words_a[part].min()), int(words_a[part].max())), n=int(part.size),
            accuracy_binary=float(np.mean((k >= 1) == (j >= 1))), over=float(np.mean(j > k)),
            under=float(np.mean(j < k)), mean_error=float(np.mean(j - k)),
        ))
    return out


def length_lines(bands: list[dict]) -> list[str]:
    """The summary's lines for :func:`by_length` (as dicts, read back from the agreement file)."""
    if not bands:
        return []
    out = ["  by passage length (words): judged above / below the known grade, binary accuracy"]
    for band in bands:
        lo, hi = band["words"]
        out.append(f"  {lo:>6}-{hi:<6} n {band['n']:>4}: above {band['over']:.2f}, below {band['under']:.2f}, "
                   f"mean error {band['mean_error']:+.2f}, accuracy {band['accuracy_binary']:.2f}")
    return out
