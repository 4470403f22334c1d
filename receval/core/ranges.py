"""Numeric ranges declared beside config fields, shared by both sides.

A field's range is metadata (``field(default=..., metadata=range_(0, 1))``); the run side
checks composed configs against it (:mod:`receval.schema`) and the read side checks
saved settings (the bootstrap settings of :mod:`receval.core.settings`) with the same
:class:`Range`. Here, not in :mod:`receval.schema`, so the read side needs no run-side import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RANGE = "receval_range"  # the metadata key of a field's range

# Shared bounds, with why:
INT32 = 2**31 - 1  # chunk indices are int32: no run holds more chunks than this
SEED = (0, INT32)  # numpy wants seeds >= 0; every chat API takes a signed 32-bit seed
SECONDS = (0.001, 86_400.0)  # a request needs a positive timeout; a day is beyond any worth waiting
WAIT = (0.0, 3600.0)  # one retry delay: an hour is beyond any outage worth waiting out
RETRIES = (0, 100)  # with doubling delays, 100 retries outlast any outage
THREADS = (1, 1024)  # requests in flight: past ~1000 threads the OS is the limit, not the server
BATCH = (1, 100_000)  # texts or pairs per batch: memory runs out long before
SHORTLIST = (1, 100_000)  # chunks per question fused or re-scored: scores are held per question x size
WORDS = (1, 1_000_000)  # words per chunk or prompt passage: a longer one is a whole section
TOKENS = (8, 1_000_000)  # tokens per chunk or pair: under 8, special tokens leave no room for text


@dataclass(frozen=True)
class Range:
    """A closed interval by default; ``low_open``: ``(low, high]``; ``high_open``: ``[low, high)``."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    hint: str = ""  # said after the range: what is usual, or what a value means
    null: str = ""  # what null means, for a field that may be null

    def holds(self, value: float) -> bool:
        value = float(value)
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def __str__(self) -> str:
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"{left}{_number(self.low)}, {_number(self.high)}{right}"


def range_(
    low: float, high: float, *, low_open: bool = False, high_open: bool = False, hint: str = "", null: str = ""
) -> dict:
    """Field metadata declaring a number's range: ``field(default=..., metadata=range_(0, 1))``."""
    return {RANGE: Range(low, high, low_open, high_open, hint, null)}


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(float(value))
