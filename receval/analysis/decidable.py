"""When a question set cannot decide between the runs shown, and what would let it: the
one note ``report`` and ``select`` show (in every format, as ``undecided`` in their JSON)
and the Python API returns (:func:`receval.analysis.undecided`).

The rule is :mod:`receval.stats.decidable`'s (no pair's difference reaches its minimum
detectable difference; at the ceiling or floor when at least half the questions score a
bounded measure's maximum or minimum in every run). :func:`undecided` applies it to each
measure shown over the questions every run scores. The decided measure (``--metric``,
the one the pairs are on) gets a note whatever the cause; each other column only when
no question separates any two runs and most sit at its ceiling or floor (a column of
1.000s or 0.000s, what a table hides), so "too few questions" is said once. The fix the
note suggests follows the cause:

- ceiling: more or harder questions; paraphrased ones when at least half the questions
  are ``direct`` (worded like the pages: the library's and ``synth``'s kind); a stricter
  cutoff (``hit@3`` -> ``hit@1`` or MRR);
- floor: a deeper cutoff (``hit@3`` -> ``hit@10`` or ``recall@10``; the deepest the runs
  store) or easier questions; MRR: a deeper ranking (``depth``);
- size: more questions, as many as would detect the largest difference seen
  (:func:`receval.stats.detectable.questions_for`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from receval.analysis.significance import score_matrix
from receval.core.errors import RunError
from receval.scoring.declared import in_unit_interval, measure_label, parse_measure
from receval.results.stored import Run
from receval.stats.decidable import Decidability, decidability, separating
from receval.stats.detectable import POWER

#: Families whose cutoff can be made stricter (ceiling) or deeper (floor).
CUT = ("hit", "recall", "ndcg", "precision")
#: The kind of a question asked in the pages' own words (library, synth).
DIRECT = "direct"


@dataclass(frozen=True)
class Undecided:
    """One measure the question set cannot decide on, why, and the fix suggested."""

    measure: str
    cause: str  # ceiling, floor or size (receval.stats.decidable.CAUSES)
    found: Decidability
    fix: tuple[str, ...]  # each suggestion in words
    instead: tuple[str, ...]  # measures suggested in its place (canonical names)
    direct: int | None  # direct questions, when paraphrased ones are suggested
    text: str  # the whole note, one line

    def to_dict(self) -> dict:
        f = self.found
        return {
            "measure": self.measure, "cause": self.cause, "n_questions": f.n_questions, "n_runs": f.n_runs,
            "at_ceiling": f.at_top, "at_floor": f.at_bottom, "separating": f.separating,
            "largest_diff": f.largest, "pair": [f.low, f.high] if f.largest > 0 else None,
            "mde": f.detectable.difference if f.detectable is not None else None,
            "alpha": f.alpha, "power": f.power, "questions_needed": f.questions_needed,
            "fix": list(self.fix), "measures": list(self.instead), "note": self.text,
        }


def instead(measure: str, cause: str, stored: frozenset[str] = frozenset()) -> list[str]:
    """Measures that could separate runs ``measure`` cannot: at the ceiling a stricter
    cutoff (``family@1``, rr), at the floor a deeper one (the deepest of the family the
    runs store, else 10, or twice k from 10 on; and recall at it); rr@k at the floor: rr."""
    if measure.startswith("rr@"):
        return ["rr"] if cause == "floor" else []
    try:
        parsed = parse_measure(measure)
    except ValueError:
        return []
    if parsed.family not in CUT or parsed.k is None:
        return []
    if cause == "ceiling":
        return [f"{parsed.family}@1", "rr"] if parsed.k > 1 else []
    if cause != "floor":
        return []
    deeper = [k for name in stored if (k := _cutoff(name, parsed.family)) is not None and k > parsed.k]
    k = max(deeper) if deeper else (10 if parsed.k < 10 else 2 * parsed.k)
    return [f"{parsed.family}@{k}"] + ([f"recall@{k}"] if parsed.family != "recall" else [])


def _cutoff(name: str, family: str) -> int | None:
    try:
        parsed = parse_measure(name)
    except ValueError:
        return None
    return parsed.k if parsed.family == family else None


def _or(measures: list[str]) -> str:
    labels = [measure_label(m) for m in measures]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]


def _gap(f: Decidability, what: str = "the largest paired difference") -> str:
    """The largest difference against its MDE, as the note says it."""
    if f.largest <= 0:
        return "every run has the same mean"
    mde = f.detectable.difference if f.detectable is not None else 0.0
    return f"{what}, #{f.high} - #{f.low} = {f.largest:+.3f}, is below its MDE {mde:.3f}"


def _planning(f: Decidability) -> str:
    return f"{f.n_questions} questions; paired t, alpha {f.alpha:.2g}, power {f.power:.0%}"


def _where(cause: str, f: Decidability) -> str:
    """Where the questions sit, ceiling or floor: how many at the bound, how many can
    still separate runs, and the largest difference against its MDE."""
    bound, count, other, other_bound = (
        ("1", f.at_top, f.at_bottom, "0") if cause == "ceiling" else ("0", f.at_bottom, f.at_top, "1")
    )
    side = "the ceiling" if cause == "ceiling" else "the floor"
    if count == f.n_questions:
        return (f"(at {side}): all {count} questions score {bound} in all {f.n_runs} runs, "
                "so no question separates any two")
    sits = (f"{count} of {f.n_questions} questions score {bound} in all {f.n_runs} runs"
            + (f" and {other} score {other_bound}" if other else ""))
    if not f.separating:
        return f"(mostly at {side}): {sits}, so no question separates any two"
    few = f"only {f.separating} separate{'s' if f.separating == 1 else ''} any two"
    return f"(mostly at {side}): {sits}, so {few}; {_gap(f)} ({_planning(f)})"


def note(measure: str, f: Decidability, kinds: Mapping[str, int] | None = None,
         stored: frozenset[str] = frozenset()) -> Undecided:
    """The note for ``measure``, which the set cannot decide on (``f``), with its fix;
    ``kinds``: how many scored questions of each kind; ``stored``: measures the runs store."""
    cause = f.cause
    if cause is None:
        raise ValueError(f"{measure}: the set decides (#{f.decided_by[0]} and #{f.decided_by[1]}); no note")
    label = measure_label(measure)
    better = instead(measure, cause, stored)
    more = (f" (about {f.questions_needed} would detect {f.largest:+.3f} between #{f.high} and #{f.low})"
            if f.questions_needed is not None else "")
    fix: list[str] = []
    direct = None
    if cause == "size":
        head = (f"cannot decide on {label} at this size: no paired difference among the {f.n_runs} runs "
                f"reaches its MDE; {_gap(f, 'the largest')} ({_planning(f)})"
                if f.separating else f"cannot decide on {label}: no question separates any two of the {f.n_runs} runs")
        fix.append("more questions" + more)
    else:
        head = f"cannot decide on {label} {_where(cause, f)}"
    if cause == "ceiling":
        fix.append("more or harder questions" + more)
        kinds = kinds or {}
        total = sum(kinds.values())
        if total and 2 * kinds.get(DIRECT, 0) >= total:
            direct = kinds[DIRECT]
            fix.append(f"paraphrased questions ({direct} of the {total} are direct: worded like the pages)")
        if better:
            fix.append(f"a stricter measure: {_or(better)}")
    elif cause == "floor":
        if better:
            fix.append(f"a deeper cutoff: {_or(better)}")
        elif measure in ("rr", "ap"):
            fix.append("a deeper ranking (a larger depth)")
        fix.append("easier questions")
    return Undecided(measure, cause, f, tuple(fix), tuple(better), direct, f"{head}. Fix: {'; '.join(fix)}")


def undecided(
    runs: list[Run], names: list[str], metric: str, alpha: float, power: float = POWER,
    kinds: Mapping[str, int] | None = None, n_resamples: int = 2000, seed: int = 0,
    separated: Collection[str] = frozenset(), stored: frozenset[str] | None = None,
) -> list[Undecided]:
    """A note for each of ``names`` the questions every run scores cannot decide on
    (module docstring): ``metric`` whatever the cause, the others only when no question
    separates any two runs and most sit at the ceiling or floor. Nothing for fewer than 2
    runs or 2 shared questions, or runs whose questions cannot be paired by id.
    ``separated``: measures other than ``metric`` already known to separate some two runs
    (:class:`receval.analysis.streamed.Separated`: their columns need not be there);
    ``stored``: the measures the runs store (default: the first run's columns)."""
    if len(runs) < 2:
        return []
    stored = frozenset(runs[0].measure_names) if stored is None else stored
    out = []
    for name in dict.fromkeys(names):
        if name != metric and name in separated:
            continue
        try:
            scores = score_matrix(runs, name, intersect=True)
        except RunError:  # fewer than 2 shared questions, or ids that repeat: nothing to decide on
            continue
        if name != metric and separating(scores):  # another column: only when no question separates runs
            continue
        found = decidability(scores, alpha, power, (0.0, 1.0) if in_unit_interval(name) else None, n_resamples, seed)
        if found.decides or (name != metric and (found.separating or found.cause == "size")):
            continue
        out.append(note(name, found, kinds, stored))
    return out
