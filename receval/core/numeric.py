"""Numbers in and out: the one place that says what counts as a real number and as a
count, and how a number is shown.

Numbers from outside (a server's usage counts, a user retriever's scores) are checked
like config values:

- a *real* is a finite int or float (numpy's included), never a boolean, a string, a
  list or None: ``"1.5"`` or ``True`` would otherwise be read as 1.5 and 1.0;
- a *count* is a real that is a whole number from 0 to :data:`MAX_COUNT` (2**53, the
  largest float64 below which every whole number is exact: counts are stored as
  float64 columns and priced).

Callers turn a ``None`` into their own error, naming where the number came from
(the server, the retriever and question, the stored file and column).

Numbers shown (:func:`fmt`, :func:`fmt_signed`, :func:`fmt_ci`, :func:`fmt_ms`): every
table, message and sentence receval writes formats them so; ``-`` for a missing one.
"""

from __future__ import annotations

import numbers

import numpy as np

MAX_COUNT = 2**53
#: Types whose values are plain real numbers (checked by type, at C speed, before a numpy cast).
_NOT_REAL = (bool, np.bool_)


def real(value) -> float | None:
    """``value`` as a finite float, or None when it is not a finite real number."""
    if isinstance(value, _NOT_REAL) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):  # an int too large for a float
        return None
    return number if np.isfinite(number) else None


def count(value) -> int | None:
    """``value`` as a count (a whole number from 0 to 2**53), or None."""
    number = real(value)
    if number is None or not 0 <= number <= MAX_COUNT or number != int(number):
        return None
    return int(number)


def reals(values: list) -> np.ndarray | None:
    """``values`` as a float64 array when every one is a finite real number, else None.
    Types are checked once per distinct type, so a long list costs one C-level pass."""
    kinds = set(map(type, values))
    if any(issubclass(kind, _NOT_REAL) or not issubclass(kind, numbers.Real) for kind in kinds):
        return None
    try:
        array = np.array(values, dtype=np.float64)
    except (OverflowError, ValueError, TypeError):
        return None
    return array if array.ndim == 1 and np.isfinite(array).all() else None


# ----------------------------------------------------------------- numbers shown


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:+.{digits}f}"


def fmt_p(value: float, alpha: float | None = None) -> str:
    """A p-value as every output shows it: ``<0.001`` below 0.001, else 3 decimals, or 4
    where 3 would print ``alpha`` itself (0.0496 and 0.0504 are not both "0.050" beside
    opposite verdicts)."""
    if value < 0.001:
        return "<0.001"
    shown = f"{value:.3f}"
    return f"{value:.4f}" if alpha is not None and shown == f"{alpha:.3f}" else shown


def fmt_ci(lo: float, hi: float, digits: int = 3, signed: bool = False, lo_open: bool = False,
           hi_open: bool = False) -> str:
    """``[lo, hi]``; an open end in a round bracket, ``(0.000, 0.250]``."""
    f = fmt_signed if signed else fmt
    return f"{'(' if lo_open else '['}{f(lo, digits)}, {f(hi, digits)}{')' if hi_open else ']'}"


def fmt_ms(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"


def fmt_ms_ci(interval) -> str:
    """A latency interval ``[lo, hi]`` in ms (an end that does not exist: ``-``)."""
    lo, hi = interval if interval is not None else (None, None)
    return f"[{fmt_ms(lo)}, {fmt_ms(hi)}]"
