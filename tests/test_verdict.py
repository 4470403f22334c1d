"""The verdict words read off a paired interval (receval.stats.verdict): each rule pinned
at its edges, both directions."""

import pytest

from receval.stats.verdict import Direction, GateOutcome, direction, gate_outcome, not_worse


@pytest.mark.parametrize("lo, hi, higher, expected", [
    (0.01, 0.2, True, Direction.better),
    (0.0, 0.2, True, Direction.not_shown),  # touching 0 shows nothing
    (-0.2, -0.01, True, Direction.worse),
    (-0.2, 0.0, True, Direction.not_shown),
    (-0.1, 0.1, True, Direction.not_shown),
    (0.01, 0.2, False, Direction.worse),  # fewer tokens is better: a rise is worse
    (-0.2, -0.01, False, Direction.better),
])
def test_direction(lo, hi, higher, expected):
    assert direction(lo, hi, higher) is expected


def test_not_worse_is_strict_and_follows_the_direction():
    assert not_worse(-0.019, 0.05, 0.02)
    assert not not_worse(-0.02, 0.05, 0.02)  # an end on the margin shows nothing
    assert not not_worse(-0.03, 0.05, 0.02)
    assert not_worse(-0.05, 0.019, 0.02, higher_is_better=False)
    assert not not_worse(-0.05, 0.021, 0.02, higher_is_better=False)


@pytest.mark.parametrize("lo, hi, margin, unchanged, expected", [
    (-0.275, -0.088, 0.1, False, GateOutcome.failed),  # a shown drop whose interval passes the margin
    (-0.213, -0.007, 0.02, False, GateOutcome.failed),
    (-0.015, -0.005, 0.02, False, GateOutcome.passed),  # a shown drop, shown within the margin
    (-0.05, 0.03, 0.02, False, GateOutcome.undecided),  # reaches both 0 and -margin
    (-0.01, 0.03, 0.02, False, GateOutcome.passed),
    (0.0, 0.0, 0.0, True, GateOutcome.passed),  # nothing changed
    (0.0, 0.0, 0.0, False, GateOutcome.undecided),
])
def test_gate_outcome(lo, hi, margin, unchanged, expected):
    outcome = gate_outcome(lo, hi, margin, unchanged=unchanged)
    assert outcome is expected
    assert outcome.exit_code == {"pass": 0, "fail": 1, "undecided": 3}[expected.value]


def test_an_open_end_on_the_bound_is_beyond_it_and_a_closed_one_is_not():
    assert direction(0.0, 0.25, lo_open=True) is Direction.better  # (0, 0.25]
    assert direction(0.0, 0.25) is Direction.not_shown  # [0, 0.25]
    assert direction(-1e-15, 0.25, lo_open=True, tie=1e-12) is Direction.better  # within rounding of 0
    assert direction(-0.3, 0.0, hi_open=True) is Direction.worse
    assert not_worse(-0.02, 0.1, 0.02, lo_open=True)
    assert not not_worse(-0.02, 0.1, 0.02)
    assert direction(0.0, 0.25, False, lo_open=True) is Direction.worse  # fewer is better: a rise
    assert gate_outcome(-0.1, 0.0, 0.02, hi_open=True) is GateOutcome.failed
