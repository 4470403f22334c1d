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

An interval's end may be *open* (:class:`receval.stats.paired.PairedTest`): that value
itself is rejected. An open end on the bound counts as beyond it; ``tie`` is the rounding
under which an end counts as on the bound.
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


def _gain(lo: float, hi: float, lo_open: bool, hi_open: bool, higher_is_better: bool):
    """The interval as a gain of B over A: (low end, high end, low open, high open)."""
    return (lo, hi, lo_open, hi_open) if higher_is_better else (-hi, -lo, hi_open, lo_open)


def _beyond(end: float, bound: float, open_: bool, tie: float, above: bool) -> bool:
    """The interval's ``end`` lies strictly beyond ``bound`` (above it for a low end, below
    for a high end), or on it (within ``tie``) while that end is open."""
    if abs(end - bound) <= tie:
        return open_
    return end > bound if above else end < bound


def direction(lo: float, hi: float, higher_is_better: bool = True, *, lo_open: bool = False,
              hi_open: bool = False, tie: float = 0.0) -> Direction:
    """better, worse or not shown, from the interval ``[lo, hi]`` of ``mean(B - A)``."""
    low, high, low_open, high_open = _gain(lo, hi, lo_open, hi_open, higher_is_better)
    if _beyond(low, 0.0, low_open, tie, above=True):
        return Direction.better
    if _beyond(high, 0.0, high_open, tie, above=False):
        return Direction.worse
    return Direction.not_shown


def not_worse(lo: float, hi: float, margin: float, higher_is_better: bool = True, *, lo_open: bool = False,
              hi_open: bool = False, tie: float = 0.0) -> bool:
    """B is shown not worse than A by more than ``margin``: the interval lies on the
    better side of ``-margin`` (a closed end on the margin shows nothing)."""
    low, _, low_open, _ = _gain(lo, hi, lo_open, hi_open, higher_is_better)
    return _beyond(low, -margin, low_open, tie, above=True)


def gate_outcome(lo: float, hi: float, margin: float, higher_is_better: bool = True, unchanged: bool = False, *,
                 lo_open: bool = False, hi_open: bool = False, tie: float = 0.0) -> GateOutcome:
    """The gate's outcome (module docstring); ``unchanged``: every question scored the
    same in both runs, which passes whatever the margin (nothing moved to infer from)."""
    ends = {"lo_open": lo_open, "hi_open": hi_open, "tie": tie}
    if unchanged or not_worse(lo, hi, margin, higher_is_better, **ends):
        return GateOutcome.passed
    if direction(lo, hi, higher_is_better, **ends) is Direction.worse:
        return GateOutcome.failed
    return GateOutcome.undecided
