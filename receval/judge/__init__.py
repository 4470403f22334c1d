"""Judging a pool: ``receval judge pool=pool.jsonl judge=KIND out=labels.jsonl``.

A judge grades each (question, unit) hole of a pool (:mod:`receval.analysis.pool`) and
writes labels JSONL (:mod:`receval.results.judgments`). Kinds, each a component of the
``judge`` config group (``conf/judge/``, its schema beside its builder):

- ``qrels`` (:mod:`.qrels`): labels a person (or another collection) made: a TREC qrels
  file, a BEIR qrels TSV or labels JSONL. How human labels come in.
- ``llm`` (:mod:`.llm`): an OpenAI-compatible chat model grades 0-3 (UMBRELA's scale),
  ``samples`` answers per pair, majority vote, every answer cached.
- ``oneshot`` (:mod:`.oneshot`): BM25 similarity to the question's known relevant unit,
  thresholded: a label-free first look, the weakest of the three.

The job (:mod:`.job`) also judges the pool's calibration pairs blind and measures the
agreement with their known grades (:mod:`.agreement`: Cohen's kappa and the confusion
matrix), written beside the labels.
"""
