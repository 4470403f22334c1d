"""Plain tables of strings, rendered for the terminal (rich), Markdown and LaTeX.

The report and compare steps compute numbers first, then turn them into
:class:`Table` objects (already formatted cells, alignment, which cells to
emphasise); every renderer here reads only those, so the formats agree. Every
string a terminal or Markdown renderer prints goes through
:func:`receval.core.terminal.printable` (a stored name's escape sequence is shown,
never obeyed); JSON escapes control characters itself, CSV keeps the values.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from receval.core.numeric import fmt, fmt_ci, fmt_ms, fmt_ms_ci, fmt_signed  # noqa: F401 - the formats every table uses
from receval.core.terminal import printable
from receval.stats.paired import LARGE


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    title: str | None = None
    align: list[str] | None = None  # "l" or "r" per column; default: first left, rest right
    bold: set[tuple[int, int]] = field(default_factory=set)  # (row, column)
    flagged: set[int] = field(default_factory=set)  # rows to make stand out
    wrap: set[int] = field(default_factory=set)  # text columns that may wrap; others never do
    note: str | None = None

    def alignment(self) -> list[str]:
        if self.align:
            return self.align
        return ["l"] + ["r"] * (len(self.columns) - 1)


# ----------------------------------------------------------------- terminal


def to_rich(lines: list[str], tables: list[Table], squeeze: bool = False):
    """A rich renderable: the header lines, then each table.

    ``squeeze``: text columns reduced to their longest word, to measure how narrow
    the tables can get without wrapping a number.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table as RichTable
    from rich.text import Text

    def cut(text: str, c: int, table: Table) -> str:
        text = printable(text)
        if not squeeze or c not in table.wrap:
            return text
        return max(text.split() or [""], key=len)

    parts = [Text(printable(line)) for line in lines]
    for table in tables:
        parts.append(Text(""))
        rich_table = RichTable(
            title=None if squeeze or table.title is None else printable(table.title),
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            highlight=False,
        )
        for c, (name, align) in enumerate(zip(table.columns, table.alignment())):
            rich_table.add_column(
                cut(name, c, table),
                justify="left" if align == "l" else "right",
                no_wrap=c not in table.wrap,
                overflow="fold",
            )
        for r, row in enumerate(table.rows):
            cells = [
                Text(cut(cell, c, table), style="bold" if (r, c) in table.bold else "")
                for c, cell in enumerate(row)
            ]
            rich_table.add_row(*cells, style="bold red" if r in table.flagged else None)
        parts.append(rich_table)
        if table.note and not squeeze:
            parts.append(Text(printable(table.note), style="dim"))
    return Group(*parts)


def print_rich(lines: list[str], tables: list[Table], file=None) -> None:
    """Print to a terminal (colours, its width, wider if a number would wrap) or to a
    file or pipe (plain text, as wide as the tables need)."""
    from rich.console import Console

    console = Console(file=file, highlight=False)
    if not console.is_terminal:
        (file or sys.stdout).write(to_text(lines, tables))
        return
    need = _width(to_rich([], tables, squeeze=True))
    if need > console.width:
        console = Console(file=file, highlight=False, width=need)
    console.print(to_rich(lines, tables))


def _width(renderable) -> int:
    from rich.console import Console

    probe = Console(file=io.StringIO(), width=100_000)
    return max(80, probe.measure(renderable).maximum)


def to_text(lines: list[str], tables: list[Table]) -> str:
    """Plain text, as wide as the tables need (nothing wraps)."""
    from rich.console import Console

    renderable = to_rich(lines, tables)
    buffer = io.StringIO()
    console = Console(file=buffer, width=_width(renderable), color_system=None, highlight=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


# ----------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    return printable(text.replace("|", "\\|").replace("\n", " "))


def to_markdown(lines: list[str], tables: list[Table]) -> str:
    out = [printable(line) for line in lines]
    for table in tables:
        out.append("")
        if table.title:
            out.extend([f"**{_md_cell(table.title)}**", ""])
        out.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
        out.append(
            "|" + "|".join(":---" if a == "l" else "---:" for a in table.alignment()) + "|"
        )
        for cells in _marked_rows(table, _md_cell, "**{}**"):
            out.append("| " + " | ".join(cells) + " |")
        if table.note:
            out.extend(["", _md_cell(table.note)])
    return "\n".join(out).lstrip("\n") + "\n"


def _marked_rows(table: Table, escape, bold: str) -> list[list[str]]:
    """Each row's cells escaped, the bold and flagged ones wrapped in ``bold`` (a format)."""
    return [
        [
            bold.format(text) if ((r, c) in table.bold or r in table.flagged) and text else text
            for c, text in enumerate(map(escape, row))
        ]
        for r, row in enumerate(table.rows)
    ]


# ----------------------------------------------------------------- latex

_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def to_latex(lines: list[str], tables: list[Table]) -> str:
    """booktabs tables, one per section (needs \\usepackage{booktabs})."""
    out = ["% needs \\usepackage{booktabs}"]
    out.extend(f"% {line}" for line in lines)
    for table in tables:
        out.append("")
        if table.title:
            out.append(f"% {table.title}")
        out.append("\\begin{tabular}{" + "".join(table.alignment()) + "}")
        out.append("\\toprule")
        out.append(" & ".join(latex_escape(c) for c in table.columns) + " \\\\")
        out.append("\\midrule")
        for cells in _marked_rows(table, latex_escape, "\\textbf{{{}}}"):
            out.append(" & ".join(cells) + " \\\\")
        out.append("\\bottomrule")
        out.append("\\end{tabular}")
        if table.note:
            out.append(f"% {table.note}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------- csv


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value):
    """A cell as receval writes it to CSV. Text starting with ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return, which a spreadsheet would run as a formula (a run's
    kind, a question, a config value may come from anyone), gets a leading ``'``
    (OWASP's rule for CSV injection). Numbers are written as numbers, and a text
    cell that is only a number (``-0.05``, a formatted parameter) stays as it is:
    neither can be a formula. None is an empty cell. A carriage return inside text is
    written as a newline, so the cell is quoted like any other multi-line cell (the
    writer's line ends are ``\\n``, and it would leave a bare ``\\r`` unquoted)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA) and not _PLAIN_NUMBER.fullmatch(value):
        value = "'" + value
    return value.replace("\r\n", "\n").replace("\r", "\n")


def to_csv(columns: list[str], rows: list[list]) -> str:
    """Every CSV receval writes (report, compare, select): header and cells through :func:`csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(c) for c in columns])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buffer.getvalue()


FORMATS = ("table", "markdown", "csv", "json", "latex")


def formatted(
    fmt: str,
    lines: Callable[[], list[str]],
    tables: Callable[[], list[Table]],
    data: Callable[[], dict],
    csv: Callable[[], str],
) -> str:
    """One view (a report, a comparison, a selection) in ``fmt`` (table, markdown, csv,
    json or latex): every format from the same computed data. ``lines`` and ``tables``
    give the header and the tables (text, Markdown, LaTeX), ``data`` the JSON, ``csv``
    the CSV; only what ``fmt`` needs is built."""
    if fmt == "json":
        return json.dumps(data(), indent=2) + "\n"
    if fmt == "csv":
        return csv()
    return {"table": to_text, "markdown": to_markdown, "latex": to_latex}[fmt](lines(), tables())


def describe_boot(boot, n: int = 0) -> str:
    """The bootstrap settings (:class:`receval.core.settings.BootstrapConfig`) in a header
    line; with ``n`` (the most questions a mean is over) above
    :data:`receval.stats.paired.LARGE`, the t interval of the mean that replaces the
    bootstrap there (:func:`receval.stats.pairing.grouped_intervals`)."""
    line = (f"{boot.level:.0%} CI: {boot.method} bootstrap over questions, "
            f"{boot.n_resamples} resamples, seed {boot.seed}")
    if n > LARGE:
        line += f"; a mean over more than {LARGE:,} questions: the t interval of the mean (its normal limit)"
    return line
