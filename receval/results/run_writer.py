"""The one writer of a run folder: :func:`write_run` stores a :class:`RunRecord` (what a run,
or an imported traces run, found) as ``results.parquet``, ``chunks.json`` and ``run.json``,
each carrying the run id, then seals the folder (:mod:`receval.results.manifest`, written
last); :func:`seal_again` seals a finished run found again (resume).

The folder is held by the run (:mod:`receval.results.claim`) and was unsealed when the run
started, so it reads as incomplete until the seal; a write that fails removes what the
run wrote of results and chunks, so no half-written run is left. The run side builds the
record; this module knows only the stored format.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from receval.core.machine import give_back_memory
from receval.core.io import WriteError
from receval.results import bond
from receval.results.claim import Claim
from receval.results.format import CHUNKS, RESULTS
from receval.results.write import TooLargeJson, json_lines, write_json_lines, write_results, write_run_json

SHOW_TOP = 10  # ranks per question whose chunks and sections chunks.json keeps (report --show's default --top is 5)
FEWER = (5, 3, 1)  # the ranks kept instead when chunks.json at SHOW_TOP would be too large
NO_CHUNKS = {"chunks": {}, "sections": {}, "evidence": {}}  # chunks.json when not even one rank fits


@dataclass(frozen=True)
class RunRecord:
    """One run as it is stored, built by the run side (:func:`receval.run.pipeline.run`,
    :func:`receval.traces.import_traces`); the run id is the folder's, added on writing.

    ``columns``: column -> one value per question (:mod:`receval.results.format`);
    ``measures``: the measure columns, in order; ``facts``: what ``results.parquet``'s
    metadata and ``run.json`` both hold (counts, fingerprints, stages...); ``written``: what
    run.json alone holds of the run side's words (``label``, ``measures``, ``config``);
    ``means``: each measure's mean over answerable questions; ``timings``: step ->
    seconds; ``shown``: ``chunks.json`` keeping each question's top ``n`` ranks;
    ``stages`` and ``extra``: latency stages and count or money columns; ``write_timing``:
    the timing the writer adds, its seconds writing the results (None: none).
    :func:`write_run` empties ``columns`` once they are written (the run's largest Python
    structure, gone before ``chunks.json`` is built); the rest stays as it was."""

    columns: dict[str, Any]
    measures: tuple[str, ...]
    facts: dict[str, Any]
    written: dict[str, Any]
    means: dict[str, float]
    timings: dict[str, float]
    shown: Callable[[int], dict] = field(repr=False)
    stages: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    write_timing: str | None = "write_s"

    @property
    def n_chunks(self) -> int:
        return int(self.facts["n_chunks"])

    @property
    def n_questions(self) -> int:
        return int(self.facts["n_questions"])

    @property
    def n_unanswerable(self) -> int:
        return int(self.facts["n_unanswerable"])


def write_run(folder: Claim, record: RunRecord) -> RunRecord:
    """Store ``record`` in the folder this run holds (started: it has its run id), sealed
    last; returns the record as written (its timings with the writer's). On a write
    error the results and chunks written are removed: never a half-written run."""
    run_dir = folder.run_dir
    facts = {**record.facts, bond.KEY: folder.run_id}  # in results.parquet's metadata and run.json alike
    began = time.perf_counter()
    write_results(run_dir, record.columns, list(record.measures), facts, list(record.stages), list(record.extra))
    record.columns.clear()  # written: the run's largest Python structure leaves before chunks.json is built
    give_back_memory()  # with the Arrow slices' pages
    timings = dict(record.timings)
    if record.write_timing:
        timings[record.write_timing] = time.perf_counter() - began
    try:
        fitting_chunks(record.shown, target=run_dir / CHUNKS, extra={bond.KEY: folder.run_id})
        write_run_json(run_dir, {**facts, **record.written, "timings": timings, "means": record.means})
        folder.seal()  # last: the folder is one run from here
    except WriteError:  # results without their run.json would be a half-written run
        for name in (RESULTS, CHUNKS):
            (Path(run_dir) / name).unlink(missing_ok=True)
        raise
    return replace(record, timings=timings)


def seal_again(folder: Claim, run_id: str | None, saved: dict[str, str] | None) -> Path:
    """Seal again a finished run found in the folder (resume): its own id, with the
    files Hydra saved for this job (:meth:`receval.results.claim.Claim.keep`)."""
    return folder.keep(run_id, saved).seal()


def fitting_chunks(
    shown: Callable[[int], dict], top: int = SHOW_TOP, target: Path | None = None, extra: dict | None = None,
) -> dict:
    """``shown(n)`` at the largest of ``top``, 5, 3, 1 ranks whose ``chunks.json`` stays
    within the door's :data:`~receval.results.door.MAX_CHUNKS_BYTES` (a larger file would
    make the whole run unreadable), with ``top``: how many ranks it kept (0: none fit, so
    ``--show`` shows ids alone). Sized as :func:`receval.results.write.write_json_lines`
    writes it; with ``target``, written there (with ``extra``) as it is sized: the file's
    text is never held whole, and written once unless it has to keep fewer ranks."""
    from receval.results.door import MAX_CHUNKS_BYTES

    for kept in sorted({top, *(t for t in FEWER if t < top)}, reverse=True):
        facts = {**shown(kept), "top": kept}
        try:
            if target is not None:
                write_json_lines(target, {**facts, **(extra or {})}, MAX_CHUNKS_BYTES)
            elif sum(map(len, json_lines({**facts, **(extra or {})}))) > MAX_CHUNKS_BYTES:
                continue
            return facts
        except TooLargeJson:
            continue
    facts = {**NO_CHUNKS, "top": 0}
    if target is not None:
        write_json_lines(target, {**facts, **(extra or {})})
    return facts
