"""Stored runs: the one home of the results format as read back.

Modules: :mod:`.stored` (the :class:`Run` type, reading), :mod:`.integrity` (a
results file's metadata, column types, values and string sizes checked before use),
:mod:`.discovery` (run / sweep / folder-of-sweeps paths -> runs), :mod:`.configs`
(saved configs, differing keys), :mod:`.selection` (questions, measures,
``key=value`` run selectors), :mod:`.pairing` (paired differences and bootstrap
intervals), :mod:`.external` (TREC runs imported as runs), :mod:`.options` (what the
command-line shells share), :mod:`.report` and :mod:`.breakdown` (what the
report computes), :mod:`.derived` (``rr@k``, numeric columns as measures),
:mod:`.show` (what came back per question), :mod:`.gate` (the regression gate),
:mod:`.listing` (every run under a folder), :mod:`.api` (the Python API re-exported here: :func:`load`,
:func:`summary`, :func:`pairs`, :func:`floor`).
"""

from receval.results.discovery import find_runs, load_one, load_runs
from receval.results.stored import Run, load_run, read_run

_API = ("floor", "load", "pairs", "summary")


def __getattr__(name: str):
    """The API functions, imported on first use: the rendering modules import the
    readers above, and the API imports the rendering, so importing it here would
    make a cycle."""
    if name in _API:
        from receval.results import api

        return getattr(api, name)
    raise AttributeError(f"module 'receval.results' has no attribute {name!r}")

__all__ = [
    "Run", "find_runs", "floor", "load", "load_one", "load_run", "load_runs", "pairs", "read_run", "summary",
]
