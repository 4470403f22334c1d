"""Scoring: the measure formulas and the per-question rows they fill, below both sides.

A run scores its rankings with it (:mod:`receval.run.pipeline`), and the read side re-scores
stored rankings with it (``report --labels``, a TREC run imported by ``report``), so the
two always agree. It imports only :mod:`receval.core` (the import contract ``scoring``
in pyproject.toml): :mod:`.questions` the labelled question and its grades,
:mod:`.qrels` the BEIR qrels reader, :mod:`.declared` the measure families declared (one
registry: names, labels, directions; :mod:`.shipped` receval's own, :mod:`.family` the
declaration), :mod:`.measures` and :mod:`.chunks` their formulas, :mod:`.rows` the
rankings and labels turned into per-question measure rows.
"""
