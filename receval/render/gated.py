"""The gate's verdict (:class:`receval.stats.gate.Gate`) in the formats that carry it
apart from the header lines: a Markdown paragraph of its own, and CSV columns on every
row. Text, LaTeX and HTML show :attr:`Gate.line` first; JSON has ``gate``."""

from __future__ import annotations

from receval.core.terminal import printable
from receval.stats.gate import Gate

GATE_COLUMNS = ["gate_run", "gate_baseline", "gate_outcome", "gate_exit_code", "gate_metric", "gate_margin",
                "gate_diff", "gate_diff_lo", "gate_diff_hi", "gate_why"]


def verdict_markdown(gate: Gate | None) -> str:
    """The verdict as a bold Markdown paragraph (nothing without a gate)."""
    return f"**{printable(gate.line)}**\n\n" if gate is not None else ""


def with_gate(gate: Gate | None, columns: list[str], rows: list[list]) -> tuple[list[str], list[list]]:
    """A CSV's columns and rows with the verdict on every row (the report's verdict,
    naming the run gated), when there is a gate."""
    if gate is None:
        return columns, rows
    cells = [gate.run, gate.baseline, gate.outcome.value, gate.exit_code, gate.metric, gate.margin,
             gate.diff.mean, gate.diff.lo, gate.diff.hi, gate.why]
    return columns + GATE_COLUMNS, [[*row, *cells] for row in rows]
