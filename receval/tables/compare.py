"""The comparison's tables: :class:`ComparisonTables` turns a computed
:class:`receval.results.comparison.Comparison` into header lines, tables and CSV."""

from __future__ import annotations

from receval import tables
from receval.chain import cutoff, fixed_note
from receval.results.selection import measure_label


class ComparisonTables(tables.Rendered):
    """Rendering of a comparison (mixed into it); reads only its computed fields."""

    def header_lines(self) -> list[str]:
        p = self.pair
        results = [d.text for d in self.differences if d.affects_results]
        others = [d.text for d in self.differences if not d.affects_results]
        lines = [
            f"A {self.labels[0]}  ({p.a})",
            f"B {self.labels[1]}  ({p.b})",
            ("config: " + "; ".join(results)) if results else (
                "config: identical" + (" in every setting that changes results" if others else "")
            ),
        ]
        if others:
            lines.append("also differ (results unaffected): " + "; ".join(others))
        lines += [
            f"{p.n_questions} questions scored in both"
            + (f" (where {', '.join(f'{c}={v}' for c, v in self.where)})" if self.where else "")
            + (f"; {p.only_a} only in A and {p.only_b} only in B left out" if p.only_a or p.only_b else "")
            + f"; {self.boot.describe()}",
        ]
        return lines

    def tables(self) -> list[tables.Table]:
        p = self.pair
        level = f"{self.boot.level:.0%} CI"
        label = measure_label(p.metric)
        main = tables.Table(
            columns=["metric", "A", "B", "B - A", level, "up", "down", "same"],
            rows=[[
                label, tables.fmt(p.mean_a), tables.fmt(p.mean_b), tables.fmt_signed(p.diff.mean),
                tables.fmt_ci(p.diff.lo, p.diff.hi, signed=True), str(p.up), str(p.down), str(p.same),
            ]],
        )
        ids = tables.Table(
            columns=["", "n", "question ids"],
            rows=[
                [f"fixed@{cutoff(p.metric)}", str(len(p.fixed)), " ".join(p.fixed) or "-"],
                [f"broken@{cutoff(p.metric)}", str(len(p.broken)), " ".join(p.broken) or "-"],
            ],
            align=["l", "r", "l"],
            note=f"fixed@{cutoff(p.metric)}: {fixed_note(p.metric, 'A', 'B')}; broken: the reverse",
            wrap={2},
        )
        return [main, ids]

    def to_csv(self) -> str:
        p = self.pair
        return tables.to_csv(
            ["a", "b", "metric", "n_questions", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi",
             "up", "down", "same", "fixed", "broken"],
            [[p.a, p.b, p.metric, p.n_questions, p.mean_a, p.mean_b, p.diff.mean, p.diff.lo,
              p.diff.hi, p.up, p.down, p.same, " ".join(p.fixed), " ".join(p.broken)]],
        )
