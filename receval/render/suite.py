"""``report --suite`` rendered: a computed :class:`receval.analysis.suite.Suite` as header
lines and tables (per collection means, differences per collection and pooled, standing
over collections), every text format, the forest plot (PNG/SVG) and the HTML page.
Nothing here computes a statistic."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np

from receval.analysis.suite import Suite, pooled_verdict
from receval.render.verdicts import few_changed, interval, p_value
from receval.stats.meta import p_values
from receval.scoring.declared import measure_label
from receval.render import tables
from receval.render.tables import Table, fmt, fmt_ci, fmt_signed


def header_lines(s: Suite) -> list[str]:
    level = f"{s.boot.level:.0%}"
    n = sum(c.n_questions for c in s.collections)
    lines = [
        f"suite: {len(s.labels)} configuration{'s' if len(s.labels) != 1 else ''} x {len(s.collections)} collections "
        f"({', '.join(c.name for c in s.collections)}); {n} questions; {measure_label(s.metric)}",
        f"baseline: {s.labels[s.baseline]}" + ("" if s.baseline_given else " (the first configuration; --baseline to choose)"),
        f"{level} CI per collection: {s.boot.method} bootstrap over questions ({s.boot.n_resamples} resamples, seed "
        f"{s.boot.seed}); differences: the paired sign-flip test (mid-p) and the interval it keeps; pooled: "
        f"DerSimonian-Laird random effects with the Hartung-Knapp interval and p (t, k-1 df), fixed effect beside it",
        "mean over collections and Borda count: two-level bootstrap (collections, then questions within each), "
        "rank intervals over the same resamples",
    ]
    return lines + [f"note: {note}" for note in s.notes]


def means_table(s: Suite) -> Table:
    level = f"{s.boot.level:.0%} CI"
    columns = ["collection", "n"]
    for label in s.labels:
        columns += [label, level]
    rows = []
    bold = set()
    for r, c in enumerate(s.collections):
        row = [c.name, str(c.n_questions)]
        best = max(round(m.mean, 3) for m in c.means)
        for j, m in enumerate(c.means):
            if round(m.mean, 3) == best and len(c.means) > 1:
                bold.add((r, len(row)))
            row += [fmt(m.mean), fmt_ci(m.lo, m.hi)]
        rows.append(row)
    return Table(columns=columns, rows=rows, title=f"{measure_label(s.metric)} per collection", bold=bold)


def difference_rows(s: Suite):
    """The differences against the baseline in one order, for the table and the forest plot:
    per configuration, each collection's paired difference, then the random-effects and the
    fixed-effect pools. Yields (label, kind, collection, n, estimate, lo, hi, pooled): kind
    is ``"collection"``, ``"random"`` or ``"fixed"``; collection and n are None for the pools."""
    for j, label in enumerate(s.labels):
        p = s.pooled[j]
        if p is None:
            continue
        for c in s.collections:
            d = c.diffs[j]
            yield label, "collection", c.name, d.n, d.mean, d.lo, d.hi, p
        yield label, "random", None, None, p.estimate, p.lo, p.hi, p
        yield label, "fixed", None, None, p.fixed, p.fixed_lo, p.fixed_hi, p


def differences_table(s: Suite) -> Table | None:
    if len(s.labels) < 2:
        return None
    level = f"{s.boot.level:.0%} CI"
    columns = ["configuration", "collection", "n", "diff", level, "p", "verdict", "tau^2", "I^2"]
    rows = []
    tests = {(label, c.name): c.diffs[j] for j, label in enumerate(s.labels) for c in s.collections if c.diffs[j]}
    for label, kind, collection, n, estimate, lo, hi, p in difference_rows(s):
        name = {"random": f"pooled, random (k={p.k})", "fixed": "pooled, fixed"}.get(kind, collection)
        spread = [f"{p.tau2:.2g}", f"{p.i2:.0%}"] if kind == "random" else ["", ""]
        if kind == "collection":
            d = tests[(label, collection)]
            cells = [interval(d.test), p_value(d.test.p, s.boot.level), d.verdict]
        else:
            random, fixed = p_values(p)
            verdict = pooled_verdict(p, s.metric) if kind == "random" else ""
            cells = [fmt_ci(lo, hi, signed=True), p_value(random if kind == "random" else fixed, s.boot.level),
                     verdict]
        rows.append([label, name, "" if n is None else str(n), fmt_signed(estimate), *cells, *spread])
    few = few_changed([f"{label} on {name}" for (label, name) in tests], [d.test for d in tests.values()])
    return Table(columns=columns, rows=rows, title=f"{measure_label(s.metric)} difference vs {s.labels[s.baseline]}",
                 align=["l", "l", "r", "r", "r", "r", "l", "r", "r"],
                 note="the verdict over collections reads the random-effects interval" + (f"; {few}" if few else ""))


def standing_table(s: Suite) -> Table:
    level = f"{s.boot.level:.0%} CI"
    st = s.standing
    rows = [
        [label, fmt(st.mean[i].mean), fmt_ci(st.mean[i].lo, st.mean[i].hi), _rank(st.mean_rank[i]),
         f"{st.borda[i].mean:g}", f"[{st.borda[i].lo:g}, {st.borda[i].hi:g}]", _rank(st.borda_rank[i])]
        for i, label in enumerate(s.labels)
    ]
    return Table(
        columns=["configuration", "mean over collections", level, "rank", "Borda", level, "Borda rank"],
        rows=rows, title="over collections (two-level bootstrap)",
    )


def _rank(r) -> str:
    return f"{r.rank} [{r.lo}-{r.hi}]" if r.lo != r.hi else f"{r.rank} [{r.lo}]"


def tables_of(s: Suite) -> list[Table]:
    return [t for t in (means_table(s), differences_table(s), standing_table(s)) if t is not None]


def to_csv(s: Suite) -> str:
    """One row per (configuration, collection) and per pooled figure."""
    columns = ["configuration", "collection", "dataset_fingerprint", "n_questions", "mean", "mean_lo", "mean_hi",
               "diff", "diff_lo", "diff_hi", "se", "tau2", "i2"]
    rows = []
    for j, label in enumerate(s.labels):
        for c in s.collections:
            d = c.diffs[j]
            m = c.means[j]
            rows.append([label, c.name, c.fingerprint, c.n_questions, m.mean, m.lo, m.hi,
                         *((d.mean, d.lo, d.hi, d.se) if d else (None,) * 4), None, None])
        p = s.pooled[j]
        if p is not None:
            rows.append([label, "pooled_random", None, None, None, None, None, p.estimate, p.lo, p.hi, p.se, p.tau2, p.i2])
            rows.append([label, "pooled_fixed", None, None, None, None, None, p.fixed, p.fixed_lo, p.fixed_hi,
                         p.fixed_se, None, None])
    return tables.to_csv(columns, rows)


def render(s: Suite, fmt_name: str) -> str:
    return tables.formatted(fmt_name, lambda: header_lines(s), lambda: tables_of(s), s.to_dict, lambda: to_csv(s))


def forest_rows(s: Suite) -> list[tuple[str, float, float, float, bool]]:
    """(label, estimate, lo, hi, pooled) per row of the forest plot: per configuration,
    each collection's difference, then the random-effects and fixed-effect pools."""
    rows = []
    for label, kind, collection, _, estimate, lo, hi, p in difference_rows(s):
        name = {"random": f"pooled (random, I²={p.i2:.0%})", "fixed": "pooled (fixed)"}.get(kind, collection)
        rows.append((f"{label} · {name}", estimate, lo, hi, kind != "collection"))
    return rows


def plot(s: Suite, path: str | Path) -> None:
    """The forest plot: every collection's difference and the pooled ones (diamonds)."""
    from receval.render.plots import _figure, _save

    rows = forest_rows(s)
    if not rows:
        from receval.core.errors import RecevalError

        raise RecevalError("--plot with --suite draws differences against the baseline: give two configurations or more")
    figure = _figure(7.5, 1.3 + 0.32 * len(rows))
    axes = figure.add_subplot()
    y = np.arange(len(rows))[::-1]
    for yi, (_, est, lo, hi, pooled) in zip(y, rows):
        axes.errorbar([est], [yi], xerr=[[est - lo], [hi - est]], fmt="D" if pooled else "o",
                      color="#b03a2e" if pooled else "#1f5fa8", capsize=3, markersize=7 if pooled else 5)
    axes.axvline(0, color="grey", linewidth=1)
    axes.set_yticks(y, [r[0] for r in rows], fontsize="small")
    axes.set_xlabel(f"{measure_label(s.metric)} difference vs {s.labels[s.baseline]} ({s.boot.level:.0%} CI)")
    axes.grid(axis="x", alpha=0.3)
    _save(figure, Path(path))


def render_html(s: Suite) -> str:
    """One self-contained page: header, tables and the forest plot as inline SVG."""
    from receval.render.html import CSS, intervals_svg, table_html
    from receval.stats.bootstrap import Interval

    body = ["<h1>receval suite report</h1>"]
    body += [f'<p class="head">{escape(line)}</p>' for line in header_lines(s)]
    body.append(table_html(means_table(s)))
    diffs = differences_table(s)
    if diffs is not None:
        body.append(table_html(diffs))
        rows = forest_rows(s)
        body.append(intervals_svg(
            [r[0] for r in rows], [Interval(r[1], r[2], r[3]) for r in rows],
            f"{measure_label(s.metric)} difference vs {s.labels[s.baseline]} ({s.boot.level:.0%} CI): per collection and pooled",
            zero=True,
        ))
    body.append(table_html(standing_table(s)))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>receval suite report</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body) + "\n</body></html>\n"
    )


# ------------------------------------------------------------- select --suite


def selection_lines(sel) -> list[str]:
    """Header of ``select --suite`` (a :class:`receval.analysis.suite_choice.SuiteSelection`)."""
    s = sel.suite
    label = measure_label(sel.metric)
    lines = [
        f"select over a suite: {label}, {len(sel.candidates)} configurations x {len(s.collections)} collections "
        f"({', '.join(c.name for c in s.collections)}); the choice is made on the pooled effect",
        f"leader: {sel.candidates[sel.leader].label} (largest pooled difference); diff = configuration - leader, "
        "pooled over collections (DerSimonian-Laird random effects, Hartung-Knapp interval), Holm-corrected over "
        f"the configurations cheaper by {sel.prefer}",
        (f"margin: {sel.margin:g} ({label} units): a cheaper configuration qualifies when its Holm interval's lower "
         f"end lies above {-sel.margin:g}") if sel.margin is not None else
        f"margin: none given (--margin, in {label} units): the leader is chosen; 'margin >' is each cheaper "
        "configuration's smallest qualifying margin",
        *sel.notes, *(f"note: {n}" for n in s.notes),
        f"chosen: {sel.candidates[sel.chosen].label} -- {sel.why}",
    ]
    return lines


def selection_table(sel) -> Table:
    rows = []
    for c in sel.candidates:
        p = c.pooled
        rows.append([
            str(c.index), c.label, fmt(c.mean), f"{c.cost:.4g}",
            "-" if p is None else fmt_signed(p.estimate),
            "-" if p is None else fmt_ci(p.lo, p.hi, signed=True),
            "-" if p is None else f"{p.i2:.0%}",
            "" if c.lo is None else fmt_ci(c.lo, c.hi, signed=True),
            "" if c.level is None else f"{c.level:.4g}",
            "" if c.margin_needed is None else f"{c.margin_needed:.3f}",
            "leader" if c.index == sel.leader else ("qualifies" if c.qualifies else
                                                    "not shown" if c.qualifies is False else
                                                    "cheaper" if c.cheaper else "dearer"),
        ])
    level = f"{sel.suite.boot.level:.0%} CI"
    return Table(
        columns=["#", "configuration", "mean over collections", sel.prefer, "pooled diff", level, "I^2",
                 "Holm CI", "level", "margin >", "status"],
        rows=rows, bold={(sel.chosen, 1)}, align=["r", "l"] + ["r"] * 9,
    )


def render_selection(sel, fmt_name: str) -> str:
    def csv() -> str:
        table = selection_table(sel)
        return tables.to_csv(table.columns, table.rows)

    return tables.formatted(fmt_name, lambda: selection_lines(sel), lambda: [selection_table(sel)], sel.to_dict, csv)
