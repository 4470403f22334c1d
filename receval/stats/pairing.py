"""Paired statistics over per-question arrays, shared by the report, compare, select
and the Python API:

- :func:`grouped_intervals`: many means' intervals, one bootstrap call per question set
  (:func:`rows_key` / :func:`mask_key` name a question set cheaply); above
  :data:`receval.stats.paired.LARGE` questions the t interval of the mean
  (:func:`t_interval`), whose cost does not grow with questions times resamples;
- :func:`align_ids`: the questions two id lists share, by id;
- :func:`fixed_broken`: the questions fixed and broken going from one run to another,
  the one rule that follows the metric (:func:`cutoff`): fixed at k when the metric at
  cutoff k goes from 0 to above 0 (``fixed@3`` for ``hit@3``, ``recall@3``,
  ``ndcg@3``...), broken the reverse; ``rr`` has no cutoff, so for it they are
  ``fixed@1``/``broken@1``: a relevant section first in one run and not in the other.
  Either way a fixed question also went up on the metric, and a broken one down.

``boot`` is the bootstrap settings (:class:`receval.core.settings.BootstrapConfig`).
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from receval.core.settings import BootstrapConfig
from scipy.stats import t as student_t

from receval.stats.bootstrap import Interval, bootstrap_means, confidence_intervals
from receval.stats.paired import LARGE

_CUTOFF = re.compile(r"@(\d+)$")


def grouped_intervals(items: list[tuple[bytes, np.ndarray]], boot: BootstrapConfig) -> list[Interval]:
    """One interval per ``(question key, values)`` item, one bootstrap call per key.

    Items with the same key are over the same questions in the same order, so they
    are stacked into one ``(n_questions, n_items)`` matrix and resampled with the
    same question draws; equal columns are resampled once and share the interval
    (BLAS may round the same column differently at another position). A lone column is duplicated before the call: a
    one-column matrix takes another BLAS path whose last bits differ, and a run's
    interval should not depend on which other runs share its report. The mean is
    ``np.mean`` of the column itself (not the bootstrap module's centred mean), so
    it equals the mean of the stored values exactly.

    Above :data:`receval.stats.paired.LARGE` questions (the paired procedure's switch to
    its normal limit) each item gets :func:`t_interval` instead, percentile and BCa alike:
    at that size the bootstrap interval of a mean is its normal limit to three decimals,
    and resampling a million questions 2,000 times is not.
    """
    groups: dict[bytes, list[int]] = {}
    for i, (key, _) in enumerate(items):
        groups.setdefault(key, []).append(i)
    out: list[Interval | None] = [None] * len(items)
    for indices in groups.values():
        if len(items[indices[0]][1]) > LARGE:
            for i in indices:
                out[i] = t_interval(items[i][1], boot.level)
            continue
        unique: dict[bytes, int] = {}  # equal columns (an imported copy of a run) share one
        column_of = [unique.setdefault(items[i][1].tobytes(), len(unique)) for i in indices]
        first = {c: i for i, c in reversed(list(zip(indices, column_of)))}
        matrix = np.column_stack([items[first[c]][1] for c in range(len(unique))])
        if matrix.shape[1] == 1:
            matrix = np.column_stack([matrix, matrix])
        intervals = confidence_intervals(matrix, **boot.kwargs())
        for i, c in zip(indices, column_of):
            out[i] = Interval(float(np.mean(items[i][1])), intervals[c].lo, intervals[c].hi)
    return out  # type: ignore[return-value]


def t_interval(values: np.ndarray, level: float) -> Interval:
    """The t interval of the mean of ``values``: ``mean +- t_{n-1, (1 + level) / 2} s / sqrt(n)``,
    ``s`` the sample standard deviation (divisor n - 1; Student, "The probable error of a
    mean", Biometrika 6, 1908). What :func:`grouped_intervals` gives above
    :data:`receval.stats.paired.LARGE` questions; a constant column's interval is its value."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    mean = float(np.mean(values))
    if n < 2:
        return Interval(mean, mean, mean)
    half = float(student_t.ppf((1.0 + level) / 2.0, n - 1) * np.std(values, ddof=1) / np.sqrt(n))
    return Interval(mean, mean - half, mean + half)


def resampled_means(scores: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The runs' means over resamples of the questions, ``(n_resamples, runs)`` from
    ``scores`` ``(questions, runs)``: :func:`receval.stats.bootstrap.bootstrap_means` up to
    :data:`receval.stats.paired.LARGE` questions; above, draws from its normal limit,
    ``N(means, S / n)`` with ``S`` the runs' covariance over the questions (the same
    joint law the resampled means tend to; cost ``n r^2 + B r^2``, not ``n B``). Equal
    columns get equal draws, as they would from resampling."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    if n <= LARGE:
        return bootstrap_means(scores, n_resamples=n_resamples, seed=seed)
    unique, column_of = np.unique(scores, axis=1, return_inverse=True)
    centre = unique.mean(axis=0)
    spread = np.atleast_2d(np.cov(unique, rowvar=False)) / n
    draws = np.random.default_rng(seed).multivariate_normal(centre, spread, size=n_resamples, method="eigh")
    return draws[:, np.ravel(column_of)]


def rows_key(ids_digest: bytes, rows: np.ndarray) -> bytes:
    """Identifies the questions ``ids[rows]`` (which, in which order) cheaply, from the
    digest of the whole id list."""
    digest = hashlib.blake2b(ids_digest, digest_size=16)
    digest.update(np.asarray(rows, dtype=np.int64).tobytes())
    return digest.digest()


def mask_key(ids_digest: bytes, mask: np.ndarray) -> bytes:
    """Identifies the questions ``ids[mask]`` cheaply (see :func:`rows_key`)."""
    digest = hashlib.blake2b(ids_digest, digest_size=16)
    digest.update(np.packbits(mask).tobytes())
    digest.update(str(len(mask)).encode())
    return digest.digest()


def align_ids(ids_a, ids_b) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Row indices into A and B of the ids both hold (A's order), and how many ids only
    A and only B hold. Ids must not repeat within a list."""
    index_b = {qid: i for i, qid in enumerate(ids_b)}
    rows_a = [i for i, qid in enumerate(ids_a) if qid in index_b]
    rows_b = [index_b[ids_a[i]] for i in rows_a]
    return (
        np.asarray(rows_a, dtype=np.int64), np.asarray(rows_b, dtype=np.int64),
        len(ids_a) - len(rows_a), len(ids_b) - len(rows_b),
    )


def cutoff(metric: str) -> int:
    """The k of fixed@k for ``metric``: its cutoff (``hit@3``, ``rr@3``, ``token_recall@3``),
    or 1 for rr and for columns without one."""
    match = _CUTOFF.search(metric.strip())
    return int(match[1]) if match else 1


def fixed_broken(metric: str, a: np.ndarray, b: np.ndarray, rank_a: np.ndarray, rank_b: np.ndarray):
    """Masks of the questions fixed and broken going from run A to run B on ``metric``
    (``a``, ``b``: its values; ``rank_*``: first relevant rank, NaN when none)."""
    if metric.strip().lower() in ("rr", "mrr"):  # rr: first relevant at rank 1
        top_a, top_b = rank_a == 1, rank_b == 1
        return top_b & ~top_a, top_a & ~top_b
    return (a == 0) & (b > 0), (a > 0) & (b == 0)
