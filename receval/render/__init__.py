"""Rendering: computed results (the dataclasses of :mod:`receval.analysis`) turned into
what a person reads. Nothing here computes a statistic; analysis never imports this.

Modules: :mod:`.tables` (the :class:`~receval.render.tables.Table` type and the
terminal, Markdown, LaTeX, CSV and JSON formats every view shares), :mod:`.report`,
:mod:`.compare`, :mod:`.select`, :mod:`.listing`, :mod:`.reproduce` and :mod:`.show` (each command's
header lines, tables and CSV), :mod:`.html` (the self-contained report page),
:mod:`.plots` and :mod:`.choice_plot` (matplotlib figures), :mod:`.best_yaml` (``best.yaml``),
:mod:`.sql` (a query's rows), :mod:`.tracker` (runs logged to MLflow).
"""
