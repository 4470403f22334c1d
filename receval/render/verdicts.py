"""How a paired comparison reads in every table: its interval (an end open where the
verdict's bound itself is rejected), p-value and verdict, the procedure's one-line
description, and the note for pairs resting on too few changed questions. One home for
these cells, so report (baseline, chain, all pairs), compare and select show them alike."""

from __future__ import annotations

from receval.core.numeric import fmt_ci, fmt_p
from receval.stats.paired import LARGE, EXACT_FLIPS, PairedTest, fewest_changed


def interval(test: PairedTest, bounds: tuple[float, ...] = (0.0,), digits: int = 3) -> str:
    """``[lo, hi]`` signed; an end that sits on one of ``bounds`` (0, or a margin) while
    the test rejects that value is shown open, ``(0.000, +0.250]``: the verdict's bound is
    excluded, as the p-value says. Elsewhere openness is below what 3 digits show."""
    lo_open, hi_open = test.shown_open(bounds)
    return fmt_ci(test.lo, test.hi, digits, signed=True, lo_open=lo_open, hi_open=hi_open)


def p_value(value: float | None, level: float = 0.95) -> str:
    """The p-value cell (:func:`receval.core.numeric.fmt_p`, against alpha = 1 - ``level``)."""
    return "-" if value is None else fmt_p(value, 1.0 - level)


def open_note(tests: list[PairedTest]) -> str | None:
    """The legend of an open end on 0, when a table shows one."""
    if any(interval(t).startswith("(") or interval(t).endswith(")") for t in tests):
        return "( or ): an open end: 0 itself is rejected (the mid-p value says so too)"
    return None


def few_changed(labels: list[str], tests: list[PairedTest]) -> str | None:
    """The pairs whose changed questions are too few for any verdict at their level."""
    thin = [(label, t) for label, t in zip(labels, tests) if not t.decidable]
    if not thin:
        return None
    level = thin[0][1].level
    shown = ", ".join(f"{label} {t.changed}" for label, t in thin)
    at = f"{level:.1%}".replace(".0%", "%")  # Holm's 97.5% is not 98%
    return (f"changed questions too few to show any difference at {at} (fewer than "
            f"{fewest_changed(level)}): {shown}")


def describe(level: float, n_resamples: int, seed: int, margin: bool = True) -> str:
    """The paired procedure in one header line; ``margin``: say the verdict's margin (0:
    better or worse once the interval leaves out 0), where no other line states one."""
    verdict = "; better or worse when the interval leaves out 0 (margin 0), else not shown" if margin else ""
    return (f"paired: sign-flip randomization test (mid-p), {level:.0%} interval = the differences it keeps; "
            f"every sign vector up to {max(n_resamples, EXACT_FLIPS):,}, else {n_resamples:,} drawn (seed {seed}); "
            f"normal limit above {LARGE:,} questions{verdict}")
