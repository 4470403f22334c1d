"""Per-question ranking measures: their formulas live in :mod:`receval.scoring.measures`
(below both sides: a run scores with them, and the read side re-scores stored rankings
with them); the run side's modules import them by this name."""

from __future__ import annotations

from receval.scoring.measures import (  # noqa: F401  (re-exported)
    CUTOFF_FAMILIES, DEPTH_FAMILIES, FAMILIES, TOKEN_FAMILIES, Judged, Measure, MeasureName, first_relevant_rank,
    is_measure, is_token_measure, lower_is_better, measure_label, measures_for, parse_measure,
)
