"""Per-question ranking measures: declared in :mod:`receval.scoring.declared` (name, label,
direction, formula, trec_eval counterpart), their formulas in :mod:`receval.scoring.measures`
(below both sides: a run scores with them, and the read side re-scores stored rankings
with them); the run side's modules import them by this name."""

from __future__ import annotations

from receval.scoring.declared import (  # noqa: F401  (re-exported)
    Family, Measure, MeasureName, declare, families, is_measure, is_token_measure, lower_is_better, measure_label,
    measures_for, parse_measure,
)
from receval.scoring.measures import Judged, first_relevant_rank  # noqa: F401  (re-exported)
