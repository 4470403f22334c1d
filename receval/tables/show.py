"""``report --show`` as plain text: one block per question, each run's top
sections (relevant ones marked ``*``) and the relevant sections it missed."""

from __future__ import annotations

from receval.results.show import QuestionView
from receval.tables import shown


def to_text(views: list[QuestionView], which: str) -> str:
    """Plain text, one block per question."""
    if not views:
        what = {"misses": "every run misses", "changed": "changed rank between the runs"}
        return f"no question {what.get(which.strip(), 'matched')}\n"
    lines = []
    for view in views:
        lines.append(f"{view.question_id} ({view.kind}): {shown(view.question)}")
        lines.append(f"  relevant: {', '.join(view.relevant) or '(none: unanswerable)'}")
        for run in view.runs:
            first = run.first_relevant_rank
            lines.append(f"  {run.label}: first relevant at {first if first else '-'}")
            for hit in run.top:
                mark = "*" if hit.relevant else " "
                score = f"{hit.score:.3f}" if hit.score is not None else "-"
                heading = f"  {hit.heading}" if hit.heading else ""
                lines.append(f"   {mark}{hit.rank:>2} {score}  {hit.section_id}{heading}")
                if hit.snippet:
                    lines.append(f"          {hit.snippet}")
            for sid, rank in run.missed:
                where = f"rank {rank}" if rank else "not retrieved"
                lines.append(f"    missed {sid} ({where})")
        lines.append("")
    return "\n".join(lines)
