"""``report --format html --out report.html``: one self-contained page.

Inline CSS and inline SVG only: the page makes no network request (no fonts,
scripts or images from elsewhere). It holds the header, the main table, an
intervals plot, the ``--by`` tables, the paired differences with a forest plot
(with ``--gate``, its verdict above everything), and a per-question view where each question expands (``<details>``) to show each
run's top sections.
"""

from __future__ import annotations

from html import escape

from receval.analysis.show import MAX_ALL
from receval.core.formatting import shown
from receval.scoring.declared import measure_label
from receval.render import report as rendered
from receval.render import costs, sureness
from receval.render.show import calls_lines, holds, missed_text, spent_text

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.b{font-weight:bold}tr.x td{background:#fff0f0}
.note,.head{color:#555}.rel{color:#0a6b2b;font-weight:bold}.snip{color:#666;font-size:.9em}
details{margin:.2em 0}summary{cursor:pointer}svg text{font:12px system-ui,sans-serif}
.gate{padding:.5em .8em;border-left:4px solid #888}.gate.pass{border-color:#0a6b2b}
.gate.fail{border-color:#b00020;background:#fff0f0}.gate.undecided{border-color:#b8860b;background:#fffbe6}
"""


def table_html(table) -> str:
    """A :class:`receval.render.tables.Table` as an HTML table."""
    align = table.alignment()
    out = [f"<h2>{escape(table.title)}</h2>" if table.title else ""]
    out.append("<table><thead><tr>" + "".join(f"<th>{escape(str(c))}</th>" for c in table.columns) + "</tr></thead><tbody>")
    for r, row in enumerate(table.rows):
        cls = ' class="x"' if r in table.flagged else ""
        cells = []
        for c, cell in enumerate(row):
            classes = ("r " if align[c] == "r" else "") + ("b" if (r, c) in table.bold else "")
            attr = f' class="{classes.strip()}"' if classes.strip() else ""
            cells.append(f"<td{attr}>{escape(str(cell))}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if table.note:
        out.append(f'<p class="note">{escape(table.note)}</p>')
    return "\n".join(out)


def intervals_svg(labels: list[str], cells: list, title: str, zero: bool = False) -> str:
    """Dot-and-whisker plot, one row per label (mean and interval), as inline SVG; the
    label column as wide as the longest label (about 7 px a character at 12 px)."""
    left = min(max(120, 7 * max((len(label) for label in labels), default=0) + 16), 560)
    width, row = 420, 24
    height = row * len(labels) + 50
    lo = min([c.lo for c in cells] + ([0.0] if zero else []))
    hi = max([c.hi for c in cells] + ([0.0] if zero else []))
    if not zero:
        lo, hi = min(lo, 0.0) if lo < 0 else max(0.0, lo - 0.1), min(1.0, hi + 0.05) if hi <= 1 else hi
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return left + (v - lo) / span * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" height="{height}" role="img">',
             f'<title>{escape(title)}</title>',
             f'<text x="{left}" y="14">{escape(title)}</text>']
    for tick in (lo, (lo + hi) / 2, hi):
        parts.append(f'<line x1="{x(tick):.1f}" y1="22" x2="{x(tick):.1f}" y2="{height - 20}" stroke="#eee"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 5}" text-anchor="middle">{tick:.2f}</text>')
    if zero:
        parts.append(f'<line x1="{x(0):.1f}" y1="22" x2="{x(0):.1f}" y2="{height - 20}" stroke="#888"/>')
    for i, (label, cell) in enumerate(zip(labels, cells)):
        y = 34 + i * row
        parts.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{escape(label)}</text>')
        parts.append(f'<line x1="{x(cell.lo):.1f}" y1="{y}" x2="{x(cell.hi):.1f}" y2="{y}" stroke="#1f5fa8" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(cell.mean):.1f}" cy="{y}" r="4" fill="#1f5fa8"><title>{cell.mean:.3f} [{cell.lo:.3f}, {cell.hi:.3f}]</title></circle>')
    parts.append("</svg>")
    return "\n".join(parts)


def questions_html(views, total: int) -> str:
    """Each question a ``<details>``: each run's top results, relevant marked (for
    evidence, with the share of each item a chunk holds), and what it missed."""
    out = ["<h2>Per question: what came back</h2>"]
    if len(views) == MAX_ALL and total > MAX_ALL:  # the whole set was asked for, and cut
        out.append(f"<p class='note'>the first {len(views)} of {total} questions</p>")
    for view in views:
        ranks = " ".join(
            f"{escape(run.label)}: {run.first_relevant_rank or '-'}" for run in view.runs
        )
        out.append(
            f"<details><summary><b>{escape(view.question_id)}</b> ({escape(view.kind or '')}) "
            f"{escape(shown(view.question))} <span class='head'>[{ranks}]</span></summary>"
        )
        relevant = [
            f"{r} \u201c{view.passages[r]}\u201d" if r in view.passages else r for r in view.relevant
        ]
        out.append(f"<p class='note'>relevant: {escape(', '.join(relevant) or 'none')}</p>")
        for run in view.runs:
            unit = " (chunk ranks: evidence items as units)" if run.by_evidence else ""
            out.append(
                f"<p><b>{escape(run.label)}</b> <span class='head'>first relevant at "
                f"{run.first_relevant_rank or '-'}{unit}</span></p>"
            )
            if run.note:
                out.append(f"<p class='note'>note: {escape(run.note)}</p>")
            out.append("<ol>")
            for hit in run.top:
                cls = " class='rel'" if hit.relevant else ""
                score = f"{hit.score:.3f}" if hit.score is not None else "-"
                covers = f" <span class='head'>[holds {escape(holds(hit.covers))}]</span>" if hit.covers else ""
                out.append(
                    f"<li value='{hit.rank}'><span{cls}>{'* ' if hit.relevant else ''}{escape(hit.section_id)}</span> "
                    f"{score} <span class='head'>{escape(hit.heading)}</span>{covers}"
                    f"<br><span class='snip'>{escape(hit.snippet)}</span></li>"
                )
            out.append("</ol>")
            for unit_id, rank in run.missed:
                out.append(f"<p class='note'>{escape(missed_text(run, unit_id, rank))}</p>")
            if run.spent:
                out.append(f"<p class='note'>spent: {escape(spent_text(run.spent))}</p>")
            calls = calls_lines(run)
            if calls:
                out.append("<pre class='note'>" + escape("\n".join(calls)) + "</pre>")
        out.append("</details>")
    return "\n".join(out)


def render(report) -> str:
    """The whole page for a :class:`receval.analysis.report.Report`."""
    metric = report.metric
    label = measure_label(metric)
    level = f"{report.boot.level:.0%} CI"
    body = ["<h1>receval report</h1>"]
    if report.gate is not None:  # the verdict first, as a CI reader looks for it
        body.append(f'<p class="gate {report.gate.outcome.value}"><b>{escape(report.gate.line)}</b></p>')
    body += [f'<p class="head">{escape(line)}</p>' for line in rendered.header_lines(report, verdict=False)]
    body.append(table_html(rendered.main_table(report)))
    for table in (costs.latency_table(report), costs.stage_table(report), costs.cost_table(report)):
        if table is not None:
            body.append(table_html(table))
    body.append(intervals_svg(
        [run.label for run in report.runs], [run.metrics[metric] for run in report.runs],
        f"{label} per run ({level})",
    ))
    for by in [report.by, *report.by_more] if report.by is not None else []:
        body.append(table_html(rendered.by_table(report, by)))
    pairs = rendered.pairs_table(report)
    if pairs is not None:
        body.append(table_html(pairs))
        labels = {run.run_dir: run.label for run in report.runs}
        body.append(intervals_svg(
            [labels[p.b] for p in report.pairs], [p.diff for p in report.pairs],
            f"{label} difference vs baseline ({level})", zero=True,
        ))
    for table in (rendered.chain_table(report), rendered.all_pairs_table(report), sureness.pairs_table(report),
                  sureness.ranks_table(report), sureness.calibration_table(report)):
        if table is not None:
            body.append(table_html(table))
    if report.shown:
        body.append(questions_html(report.shown, report.questions["n_questions"]))
    if report.per_question is not None:
        body.append(table_html(rendered.question_table(report)))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>receval report</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body) + "\n</body></html>\n"
    )
