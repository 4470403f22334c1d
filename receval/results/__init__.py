"""Stored runs: the one home of the results format, written and read back.

Modules: :mod:`.format` (the schema of ``results.parquet`` and ``run.json``),
:mod:`.write` (writing them), :mod:`.manifest` (the manifest written last: a folder is
one run or incomplete), :mod:`.door` (:func:`open_run`, the one way a command reads a run
folder: contained, bounded, checked), :mod:`.record` (the frozen :class:`Run` type),
:mod:`.stored` (the :class:`Run` type as readers import it),
:mod:`.integrity` (a results file's metadata, column types, values and string sizes
checked before use), :mod:`.discovery` (:func:`load_runs`: run / sweep / folder-of-sweeps paths -> runs),
:mod:`.configs` (saved configs, differing keys), :mod:`.identity` (what a run's results
depend on), :mod:`.labels` (a run's name, from its saved config), :mod:`.external` and
:mod:`.trec` (TREC run and qrels files, imported and exported).

Nothing here computes a statistic or formats a table: that is :mod:`receval.analysis`
(whose functions are the Python API) and :mod:`receval.render`.

The door's two public names: :func:`open_run` (one run folder) and :func:`load_runs`
(runs, sweeps, folders of sweeps and TREC run files, in order).
"""

from receval.results.discovery import load_runs
from receval.results.door import open_run

__all__ = ["load_runs", "open_run"]
