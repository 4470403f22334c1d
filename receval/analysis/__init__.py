"""Pure functions over stored runs, returning dataclasses: what every number receval
reports is computed from. Never imports :mod:`receval.render` or :mod:`receval.cli`.

Modules: :mod:`.filters` (runs and questions kept, measure names, ``key=value``
selectors), :mod:`.derived` (``rr@k``, numeric columns as measures), :mod:`.settings`
(the bootstrap settings), :mod:`.summary` (per-run means and intervals, floors),
:mod:`.pairs` (two runs paired by question), :mod:`.chain` (stage by stage),
:mod:`.breakdown` (``--by``, per-question ranks, latency per stage), :mod:`.show`
(what came back per question), :mod:`.costs` (what a run costs), :mod:`.latency` (which
run is faster, by select's one rule), :mod:`.units` (what
the labels say about the measures), :mod:`.report` (the report as data and the options
it is asked with), :mod:`.report_runs` and :mod:`.compose` (the report composed),
:mod:`.gate`, :mod:`.comparison` and :mod:`.differences` (``compare``), :mod:`.choice`
(what ``select`` computes), :mod:`.listing` (every run under a folder),
:mod:`.reproduction` (a run against its re-run), :mod:`.decidable` (when the questions
cannot decide between the runs, and the fix), :mod:`.significance` (tests,
corrections, effect sizes, detectable differences, rank intervals, A/A calibration), :mod:`.warehouse` (SQL views over
stored runs, DuckDB), :mod:`.suite` (one set of configurations over several collections:
per-collection and pooled differences, standing over collections), :mod:`.tracker` (what ``export --to mlflow`` logs), :mod:`.api`
(the Python API, re-exported here).
"""

from receval.analysis.api import (
    Comparison, PairTest, Suite, Sureness, Undecided, compare, floor, gate, how_sure, load, pairs, report_for,
    suite_report, summary, undecided,
)

__all__ = [
    "Comparison", "PairTest", "Suite", "Sureness", "Undecided", "compare", "floor", "gate", "how_sure", "load", "pairs",
    "report_for", "suite_report", "summary", "undecided",
]
