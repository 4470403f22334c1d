"""A reproduction as text: ``receval reproduce``'s lines per run."""

from __future__ import annotations

from receval.analysis.reproduction import Reproduction
from receval.core.terminal import printable


def lines(result: Reproduction, limit: int = 50) -> list[str]:
    """One line when the re-run is identical; otherwise what differs, at most ``limit``
    questions listed (``--format json`` lists every one)."""
    where = f"re-run in {result.out_dir}" if result.out_dir else "re-run deleted"
    if result.identical:
        out = [
            f"{result.run_dir}: identical ({result.n_questions} questions, {len(result.columns)} "
            f"columns compared, timings excepted; {where})"
        ]
    else:
        out = [f"{result.run_dir}: DIFFERS ({where})"]
        if result.columns_only_stored or result.columns_only_reproduced:
            out.append(
                f"  columns only in the stored run: {', '.join(result.columns_only_stored) or '-'}; "
                f"only in the re-run: {', '.join(result.columns_only_reproduced) or '-'}"
            )
        for label, ids in (("stored run", result.only_stored), ("re-run", result.only_reproduced)):
            if ids:
                out.append(f"  {len(ids)} question(s) only in the {label}: {_some(ids)}")
        if result.differences:
            out.append(
                f"  {len(result.differences)} of {result.n_questions} questions differ:"
            )
            for i, (qid, cols) in enumerate(result.differences.items()):
                if i == limit:
                    out.append(
                        f"  ... and {len(result.differences) - limit} more (--format json lists all)"
                    )
                    break
                out.append(f"  {qid}: {', '.join(cols)}")
    out.extend(f"  note: {note}" for note in result.notes)
    return [printable(line) for line in out]  # question ids and notes are stored text


def _some(ids: list[str], n: int = 20) -> str:
    return " ".join(ids[:n]) + (f" ... (+{len(ids) - n})" if len(ids) > n else "")
