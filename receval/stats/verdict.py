"""The words of a paired verdict, read off one interval of ``mean(B - A)``.

Every comparison receval prints or returns (report ``--baseline``/``--chain``/``--gate``,
compare, select, suite, the Python API) turns its paired interval into one of three
statements, in the measure's own direction (``higher_is_better`` false for
``context_tokens@k``, where fewer is better):

- **better**: the whole interval lies on the better side of 0;
- **worse**: the whole interval lies on the worse side of 0;
- **not shown**: the interval reaches 0: these questions do not tell the runs apart.

With a ``margin`` (in the measure's units, >= 0: how much worse still counts as not
worse), B is **shown not worse** when the whole interval lies on the better side of
``-margin``: the lower end of a two-sided interval, the usual non-inferiority rule (ICH
E9; Piaggio et al., CONSORT for non-inferiority trials, JAMA 2012). An interval that
merely touches 0 shows nothing.

The gate (``report RUN --gate BASELINE --margin M``) reads three outcomes off the same
interval, so that a shown drop can never pass and a question set too small to decide
says so rather than passing:

- ``pass`` (exit 0): shown not worse at the margin, or no question changed at all;
- ``fail`` (exit 1): shown worse, and not shown within the margin;
- ``undecided`` (exit 3): neither: the interval reaches both 0 and ``-margin``.
"""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    """What a paired interval shows about B against A."""

    better = "better"
    worse = "worse"
    not_shown = "not shown"


class GateOutcome(StrEnum):
    """The gate's three outcomes (module docstring), each with its own exit code."""

    passed = "pass"
    failed = "fail"
    undecided = "undecided"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 undecided (2 stays the exit code of bad input)."""
        return {"pass": 0, "fail": 1, "undecided": 3}[self.value]


def _gain(lo: float, hi: float, higher_is_better: bool) -> tuple[float, float]:
    """The interval as a gain of B over A (its lower and upper end), whatever the direction."""
    return (lo, hi) if higher_is_better else (-hi, -lo)


def direction(lo: float, hi: float, higher_is_better: bool = True) -> Direction:
    """better, worse or not shown, from the interval ``[lo, hi]`` of ``mean(B - A)``."""
    low, high = _gain(lo, hi, higher_is_better)
    if low > 0:
        return Direction.better
    if high < 0:
        return Direction.worse
    return Direction.not_shown


def not_worse(lo: float, hi: float, margin: float, higher_is_better: bool = True) -> bool:
    """B is shown not worse than A by more than ``margin``: the interval lies on the
    better side of ``-margin`` (strictly: an end on the margin shows nothing)."""
    low, _ = _gain(lo, hi, higher_is_better)
    return low > -margin


def gate_outcome(lo: float, hi: float, margin: float, higher_is_better: bool = True,
                 unchanged: bool = False) -> GateOutcome:
    """The gate's outcome (module docstring); ``unchanged``: every question scored the
    same in both runs, which passes whatever the margin (nothing moved to infer from)."""
    if unchanged or not_worse(lo, hi, margin, higher_is_better):
        return GateOutcome.passed
    if direction(lo, hi, higher_is_better) is Direction.worse:
        return GateOutcome.failed
    return GateOutcome.undecided
