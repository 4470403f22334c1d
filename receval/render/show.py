"""``report --show`` as plain text: one block per question, each run's first relevant
rank (as stored), its top results (relevant ones marked ``*``; for evidence, the share
of each item a chunk holds), the relevant units it missed, what the question spent
(requests, tokens, money, where stored) and a trajectory run's calls; as one row per
result for CSV and LaTeX (:func:`hits_table`), the text fenced for Markdown
(:func:`fenced`), every format through :func:`render`. Every line is printed
through :func:`receval.core.terminal.printable`: a snippet's line break or a stored
id's escape sequence is shown, never obeyed."""

from __future__ import annotations

import json
import re

from receval.analysis.show import QuestionView, RunView
from receval.core.terminal import printable
from receval.render.gated import verdict_markdown, with_gate
from receval.core.formatting import shown
from receval.render.tables import Table, to_csv, to_latex
from receval.stats.gate import Gate


def holds(covers: list[tuple[str, float]]) -> str:
    """``holds 100% of bees:684-731``: what of the evidence a chunk holds."""
    return ", ".join(f"{share:.0%} of {item}" for item, share in covers)


def missed_text(run: RunView, unit: str, rank: int | None) -> str:
    """``missed bees:684-731 (found at rank 8)``; a section: ``(rank 8)``."""
    if run.by_evidence:
        return f"missed {unit} ({f'found at rank {rank}' if rank else 'not found in the retrieved chunks'})"
    return f"missed {unit} ({f'rank {rank}' if rank else 'not retrieved'})"


def spent_text(spent: dict[str, float]) -> str:
    """``requests.http 2, input_tokens.http 1,183, cost_usd $0.0024``: as stored, by column."""
    def value(column: str, amount: float) -> str:
        return f"${amount:.4g}" if column.startswith("cost_usd") else f"{amount:,.0f}"
    return ", ".join(f"{column} {value(column, amount)}" for column, amount in spent.items())


def calls_text(run: RunView) -> str:
    """``2 calls; first relevant at call 2; recall over the calls 1.00``."""
    facts = run.trajectory
    n = facts.get("n_calls", len(run.calls or []))
    first = facts.get("first_relevant_call")
    union = facts.get("recall_union")
    return (f"{n} call{'s' if n != 1 else ''}; first relevant at call {first if first else '-'}"
            + (f"; recall over the calls {union:.2f}" if union is not None else ""))


def calls_lines(run: RunView) -> list[str]:
    """A trajectory run's calls: each call's query, latency and the sections it returned
    (relevant ones marked ``*`` with their rank in the call); none for another run."""
    if run.calls is None:
        return []
    lines = [f"calls: {calls_text(run)}"]
    for call in run.calls:
        ms = f"{call.latency_ms:.1f} ms" if call.latency_ms is not None else "- ms"
        found = dict(call.relevant)
        ids = " ".join(f"*{sid}" if sid in found else sid for sid in call.top)
        more = f" +{call.n_retrieved - len(call.top)}" if call.n_retrieved > len(call.top) else ""
        below = [f"*{sid} (rank {rank})" for sid, rank in call.relevant if sid not in call.top]
        lines.append(f"  {call.number:>2}. {ms:>9}  {shown(call.query)}")
        lines.append(f"      -> {call.n_retrieved} section{'s' if call.n_retrieved != 1 else ''}"
                     + (f": {ids}{more}" if ids else "") + (f"; {', '.join(below)}" if below else ""))
    return lines


def to_text(views: list[QuestionView], which: str) -> str:
    """Plain text, one block per question."""
    if not views:
        what = {"misses": "every run misses", "changed": "changed rank between the runs"}
        return f"no question {what.get(which.strip(), 'matched')}\n"
    lines = []
    for view in views:
        lines.append(f"{view.question_id} ({view.kind}): {shown(view.question)}")
        relevant = [f'{r} "{view.passages[r]}"' if r in view.passages else r for r in view.relevant]
        lines.append(f"  relevant: {', '.join(relevant) or '(none: unanswerable)'}")
        for run in view.runs:
            first = run.first_relevant_rank
            unit = " (chunk ranks: evidence items as units)" if run.by_evidence else ""
            lines.append(f"  {run.label}: first relevant at {first if first else '-'}{unit}")
            if run.note:
                lines.append(f"    note: {run.note}")
            for hit in run.top:
                mark = "*" if hit.relevant else " "
                score = f"{hit.score:.3f}" if hit.score is not None else "-"
                heading = f"  {hit.heading}" if hit.heading else ""
                covers = f"  [holds {holds(hit.covers)}]" if hit.covers else ""
                lines.append(f"   {mark}{hit.rank:>2} {score}  {hit.section_id}{heading}{covers}")
                if hit.snippet:
                    lines.append(f"          {hit.snippet}")
            for unit_id, rank in run.missed:
                lines.append(f"    {missed_text(run, unit_id, rank)}")
            if run.spent:
                lines.append(f"    spent: {spent_text(run.spent)}")
            lines += [f"    {line}" for line in calls_lines(run)]
        lines.append("")
    return "\n".join(map(printable, lines))  # each line one stored-text line, escapes shown


def hits_table(views: list[QuestionView]) -> Table:
    """One row per result shown (question, run, rank): what ``--show`` writes as CSV or LaTeX."""
    rows = []
    for view in views:
        for run in view.runs:
            first = str(run.first_relevant_rank or "-")
            for hit in run.top:
                score = f"{hit.score:.3f}" if hit.score is not None else "-"
                rows.append([view.question_id, run.label, first, str(hit.rank), "*" if hit.relevant else "",
                             score, hit.section_id, hit.heading, holds(hit.covers), hit.snippet])
    columns = ["question_id", "run", "first relevant", "rank", "relevant", "score", "id", "heading", "holds", "snippet"]
    return Table(columns=columns, rows=rows, align=["l", "l", "r", "r", "l", "r", "l", "l", "l", "l"], wrap={7, 9},
                 title="What came back per question (--show)")


def fenced(text: str) -> str:
    """``text`` as a Markdown code block whose fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip(chr(10))}\n{fence}\n"


def render(views: list[QuestionView], which: str, fmt: str, gate: Gate | None = None) -> str:
    """``--show`` in ``fmt``: plain text, Markdown (the text fenced), CSV and LaTeX (one
    row per result), JSON (the views; with a gate, ``{"gate", "shown"}``); the gate's
    verdict first when there is one."""
    verdict = [gate.line] if gate is not None else []
    if fmt == "json":
        data = [view.to_dict() for view in views]
        return json.dumps({"gate": gate.to_dict(), "shown": data} if gate is not None else data, indent=2) + "\n"
    if fmt == "latex":
        return to_latex(verdict, [hits_table(views)])
    if fmt == "csv":
        table = hits_table(views)
        return to_csv(*with_gate(gate, table.columns, table.rows))
    text = to_text(views, which)
    if fmt == "markdown":
        return verdict_markdown(gate) + fenced(text)
    return "".join(f"{line}\n" for line in verdict) + text
