"""The report's latency and cost tables, from a computed
:class:`receval.analysis.report.Report`: each run's latency p50 and p95 with their
intervals and the runs it is shown faster than (:mod:`receval.analysis.latency`), the
latency of each stage, and the cost per question with its interval. Nothing here
computes a statistic."""

from __future__ import annotations

from receval.analysis.report import Report
from receval.render import tables
from receval.core.formatting import shown
from receval.stats.quantiles import METHOD, fewest_values


def params_cells(report: Report, run) -> list[str]:
    """The run's value of each parameter column; ``-`` where it does not apply."""
    return [shown(run.params[p], "label") if p in run.params else "-" for p in report.params]


def latency_table(report: Report) -> tables.Table | None:
    """Each run's latency p50 and p95 with their intervals, how many timings each
    question's latency is the median of (when any run repeats), the runs it is shown
    faster than and, with ``--baseline``, its verdict against the baseline: all by one
    rule (:mod:`receval.analysis.latency`)."""
    if not any(run.latency for run in report.runs):
        return None
    level = f"{report.boot.level:.0%} CI"
    order = report.latency
    base = report.baseline if order is not None else None
    repeats = any(run.repeats > 1 for run in report.runs)
    columns = ["#", *report.params, "p50 ms", f"p50 {level}", "p95 ms", f"p95 {level}"]
    columns += (["timed"] if repeats else []) + (["faster than"] if order else [])
    columns += [f"vs #{base}"] if base is not None else []
    rows, missing = [], False
    for i, run in enumerate(report.runs):
        row = [str(i), *params_cells(report, run)]
        for name in ("p50", "p95"):
            found = run.latency.get(name)
            row += [tables.fmt_ms(found.value), tables.fmt_ms_ci((found.lo, found.hi))] if found else ["-", "-"]
            missing |= found is not None and (found.lo is None or found.hi is None)
        row += [f"x{run.repeats}"] if repeats else []
        if order:
            row.append(" ".join(f"#{j}" for j in order.faster_than(i)) or "-")
        if base is not None:
            row.append("baseline" if i == base else order.verdict(i, base) or "-")
        rows.append(row)
    notes = [f"over the questions scored; {level}: {METHOD}"]
    if missing:
        needs = fewest_values(0.95, report.boot.level)
        notes.append(f"-: too few questions for that end at this level (a p95's needs {needs})")
    if repeats:
        notes.append("timed xN: each question's latency is the median of N interleaved timings (timing.repeats)")
    if order:
        notes.append(f"faster by select's latency rule: {order.rule}")
    align = ["r"] + ["l"] * len(report.params) + ["r"] * (len(columns) - 1 - len(report.params))
    return tables.Table(columns=columns, rows=rows, align=align, title="Latency per question (ms)",
                        note="; ".join(notes))


def stage_table(report: Report) -> tables.Table | None:
    """Latency per stage, one row per run and stage (p50 and p95, each with its
    interval), and its API calls per 1,000 questions when any stage calls one: shown
    when a run has stages beyond one retriever and the top-k selection, or calls an API."""
    multi = any(len([s for s in run.stages if s != "select"]) > 1 for run in report.runs)
    paid = any(f["api_calls_per_1000"] for run in report.runs for f in run.stages.values())
    if not (multi or paid):
        return None
    level = f"{report.boot.level:.0%} CI"
    columns = ["#", *report.params, "stage", "p50 ms", f"p50 {level}", "p95 ms", f"p95 {level}"]
    columns += ["API calls / 1k questions"] if paid else []
    rows = []
    for i, run in enumerate(report.runs):
        for stage, fact in run.stages.items():
            row = [str(i), *params_cells(report, run), stage]
            for name in ("p50", "p95"):
                row += [tables.fmt_ms(fact.get(name)), tables.fmt_ms_ci(fact.get(f"{name}_ci"))]
            row += [f"{fact['api_calls_per_1000']:.0f}"] if paid else []
            rows.append(row)
    n_left = len(report.params) + 1
    align = ["r"] + ["l"] * n_left + ["r"] * (len(columns) - 1 - n_left)
    return tables.Table(columns=columns, rows=rows, align=align, title="Latency per stage (ms per question)",
                        note=f"over the questions scored; {level}: order statistics, as for the whole question")


def cost_table(report: Report) -> tables.Table | None:
    """Per run: pairs a re-ranker scored per question, US dollars per 1,000 questions with
    its bootstrap interval over questions, and the one-off index cost, where any run has
    them (:func:`receval.analysis.costs.cost_facts`)."""
    facts = [run.costs or {} for run in report.runs]
    priced = any(f.get("priced") for f in facts)  # $ columns only when some run was priced
    shown = [
        (name, key) for name, key in (("pairs / q", "pairs_per_question"), ("$ / 1k q", "usd_per_1000"),
                                      ("index $", "index_usd"))
        if any(f.get(key) is not None for f in facts) and (key != "usd_per_1000" or priced)
    ]
    if not shown:
        return None
    level = f"{report.boot.level:.0%} CI"
    columns = ["#", *report.params]
    for name, key in shown:
        columns += [name] + ([f"$ {level}"] if key == "usd_per_1000" else [])
    rows = []
    for i, (run, fact) in enumerate(zip(report.runs, facts)):
        row = [str(i), *params_cells(report, run)]
        for _, key in shown:
            value = fact.get(key)
            if key == "pairs_per_question":
                row.append("-" if value is None else f"{value:.1f}")
                continue
            estimated = "*" if key == "usd_per_1000" and fact.get("tokens_estimated") else ""
            row.append("-" if value is None else _usd(value) + estimated)
            if key == "usd_per_1000":
                ci = fact.get("usd_per_1000_ci")
                row.append(f"[{_usd(ci[0])}, {_usd(ci[1])}]" if ci else "-")
        rows.append(row)
    notes = ["over the questions scored"]
    if any(key != "pairs_per_question" for _, key in shown):
        notes.append(f"$ from the prices in each run's cost.<stage> config; {level}: bootstrap over questions; "
                     "index $: embedding the corpus once")
    if any(f.get("tokens_estimated") for f in facts):
        notes.append("*: some tokens estimated (the API reported no usage)")
    align = ["r"] + ["l"] * len(report.params) + ["r"] * (len(columns) - 1 - len(report.params))
    return tables.Table(columns=columns, rows=rows, align=align, title="Cost per question", note="; ".join(notes))


def _usd(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.4f}" if value < 1 else f"{value:.2f}"
