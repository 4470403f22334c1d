"""What a run's stored labels say about its measures: relevant units per question.

With one relevant unit per question (one section, or one evidence item: what
synthetic questions and most QA sets have), ``recall@k`` is the share of that one
unit found in the top k, which is ``hit@k`` exactly, and ``precision@k`` is 1/k at
best; a report over such a set says so, so neither reads as a separate finding.

A question's relevant *units* are its evidence items when it has any (labels stored
as ``page:start-end``, after its section ids, :mod:`receval.run.evaluate`), otherwise its
sections with grade >= 1, as the measures count them (:mod:`receval.measures.spans`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.core.errors import RecevalError
from receval.results.door import open_run
from receval.results.stored import Run

EVIDENCE = r":[0-9]+-[0-9]+$"  # an evidence item's stored label: page:start-end
ONE_LABEL = "every question has one relevant label: recall@k equals hit@k, and precision@k is at most 1/k"


def units_per_question(relevant: pa.Array, grades: pa.Array) -> np.ndarray:
    """Relevant units of each row, from the stored ``relevant`` and ``grades`` lists."""
    relevant, grades = pc.fill_null(relevant, pa.scalar([], relevant.type)), pc.fill_null(grades, pa.scalar([], grades.type))
    rows = pc.list_parent_indices(relevant).to_numpy()
    labels = pc.list_flatten(relevant)
    evidence = pc.fill_null(pc.match_substring_regex(labels, EVIDENCE), False).to_numpy(zero_copy_only=False)
    graded = pc.fill_null(pc.greater_equal(pc.list_flatten(grades), 1), False).to_numpy(zero_copy_only=False)
    if len(graded) != len(evidence):  # grades not one per label: not a file receval wrote
        raise ValueError("relevant and grades differ in length")
    n = len(relevant)
    items = np.bincount(rows[evidence], minlength=n)
    sections = np.bincount(rows[~evidence & graded], minlength=n)
    return np.where(items > 0, items, sections)


def _stored_units(run: Run) -> np.ndarray | None:
    """Units per question of the run's (filtered) questions, read from its results
    file (or from the run in memory when it holds them: re-scored with added labels);
    None when there is none to read (an imported TREC run) or it is not receval's."""
    if {"relevant", "grades"} <= set(run.table.column_names):
        return units_per_question(run.table.column("relevant").combine_chunks(), run.table.column("grades").combine_chunks())
    try:  # through the one door: complete, contained, bounded
        table = open_run(run.run_dir, skip=frozenset(), only=frozenset({"relevant", "grades"})).table
        table = table.filter(pc.is_in(table.column("question_id"), pa.array(run.ids.tolist(), pa.string())))
        return units_per_question(table.column("relevant").combine_chunks(), table.column("grades").combine_chunks())
    except (OSError, ValueError, TypeError, pa.ArrowException, RecevalError):
        return None


def one_label_note(runs: list[Run]) -> str | None:
    """:data:`ONE_LABEL` when every scored question of every run has exactly one
    relevant unit (each question set, same ids from the same dataset files, read once),
    else None."""
    seen: set[tuple] = set()
    any_scored = False
    for run in runs:
        key = (run.ids_digest, str(run.metadata.get("dataset_fingerprint")))
        if key in seen:
            continue
        seen.add(key)
        units = _stored_units(run)
        if units is None:
            return None
        scored = units[units > 0]
        if (scored != 1).any():
            return None
        any_scored |= scored.size > 0
    return ONE_LABEL if any_scored else None
