"""Statistics over per-question scores: pure functions on numpy arrays that return small
frozen dataclasses (significance tests, corrections, effect sizes, detectable
differences, rank intervals, A/A calibration). Nothing here reads runs or formats text."""
