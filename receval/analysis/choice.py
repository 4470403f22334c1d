"""Choosing a configuration from stored runs: the cheapest one *shown* not worse than the best.

``receval select`` (the shell in :mod:`receval.cli.select`) calls :func:`choose`:

1. Every run is scored on the selection split only (``--split dev``): its mean and
   bootstrap interval of one measure.
2. The *leader* is the best mean (equal means: the cheapest of them by the tie rule of
   :class:`receval.stats.cheaper.CostOrder`).
3. The runs *cheaper* than the leader by ``--prefer`` (:mod:`receval.stats.cheaper`: chunks
   and money exactly, latency only beyond its noise) are paired with it question by
   question; a cheaper run *qualifies* only when it is shown not worse: the lower end
   of its Holm-corrected interval of ``run - leader`` lies above ``-margin``
   (:mod:`receval.stats.noninferiority`). The margin is the user's statement of what "not
   worse" means, in the measure's units; without one nothing can be shown not worse,
   the leader is chosen, and each cheaper run's smallest qualifying margin is given.
   With one and no run qualifying, each gets the questions it would need
   (:func:`receval.stats.power.non_inferiority_questions`).
4. The contenders (the leader and every qualifying run) go through the tie rule: of
   those no other contender is cheaper than, the higher mean, then fewer stages, then
   the smaller index. "Cheaper" by latency reads the runs' stages first
   (:func:`stage_tree`: a run doing part of another's work is cheaper, the same stages
   tie) and the clock only beyond a stated minimum and the sweep's own noise, so the
   same sweep rerun gives the same verdicts.

Nothing here retrieves: everything is read from the stored runs. Rendering is
:mod:`receval.render.select`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from receval.analysis import filters
from receval.analysis.costs import costs_of, latencies, n_stages
from receval.analysis.decidable import undecided
from receval.analysis.pairs import align
from receval.analysis.summary import question_counts
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError, RunError, named
from receval.core.numeric import fmt_ms
from receval.core.vocabulary import COST as COLUMN
from receval.scoring.declared import measure_label
from receval.results.labels import nodes_of, run_labels
from receval.results.stored import Run
from receval.stats import noninferiority
from receval.stats.bootstrap import Interval
from receval.stats.paired import PairedTest
from receval.stats.cheaper import PREFERENCES, CostOrder, Tree, cost_order
from receval.stats.pairing import grouped_intervals, rows_key
from receval.stats.power import POWER

RULE = ("a run cheaper than the leader by {by} is a contender only when shown not worse: the "
        "lower end of its Holm-corrected interval of (run - leader) lies above -margin")
CORRECTION = "Holm (1979) step-down over the {m} run{s} cheaper than the leader"
#: Means closer than this are equal (a mean of the same values summed in another order).
SAME_MEAN = 1e-12


@dataclass
class Candidate:
    """One run as the selection sees it."""

    index: int
    label: str
    run_dir: str
    mean: Interval  # on the selection split
    diff_mean: float | None  # mean(run - leader); None for the leader
    cheaper: bool  # than the leader, by the cost used
    diff: Interval | None = None  # Holm-corrected interval; cheaper runs only
    test: PairedTest | None = None  # the paired procedure behind it (p, open ends, changed questions)
    level: float | None = None  # its confidence level
    margin_needed: float | None = None  # qualifies at every margin above it; cheaper runs only
    qualifies: bool | None = None  # at the given margin; None without one
    questions_needed: int | None = None  # at the given margin when it does not qualify
    contender: bool = False  # the leader, or a run that qualifies
    cost: float | None = None
    stages: int = 1
    costs: dict[str, float | None] = field(default_factory=dict)  # every preference


@dataclass
class Selection:
    metric: str
    split: str | None
    prefer: str  # asked for
    cost_by: str  # used (money falls back to p50_ms when no cost is recorded)
    margin: float | None  # None: not given
    boot: BootstrapConfig
    candidates: list[Candidate]
    leader: int
    chosen: int
    why: str
    n_questions: int  # paired questions the comparisons are over
    notes: list[str] = field(default_factory=list)
    held_out: dict | None = None  # --report-on: the chosen config on the held-out split
    undecided: list = field(default_factory=list)  # receval.analysis.decidable.Undecided: the split cannot decide

    @property
    def tested(self) -> list[Candidate]:
        """The cheaper runs: the family Holm corrects over."""
        return [c for c in self.candidates if c.cheaper]

    @property
    def correction(self) -> str:
        m = len(self.tested)
        return CORRECTION.format(m=m, s="" if m == 1 else "s")

    @property
    def planning_alpha(self) -> float:
        """One-sided level the questions needed are planned at (Holm's first step)."""
        return (1.0 - self.boot.level) / (2 * max(1, len(self.tested)))

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "split": self.split,
            "prefer": self.prefer,
            "cost_by": self.cost_by,
            "margin": self.margin,
            "rule": RULE.format(by=self.cost_by),
            "correction": self.correction,
            "n_questions": self.n_questions,
            "power": POWER,
            "planning_alpha": self.planning_alpha,
            "bootstrap": self.boot.kwargs(),
            "leader": self.leader,
            "chosen": self.chosen,
            "why": self.why,
            "notes": list(self.notes),
            "runs": [
                {
                    "index": c.index, "label": c.label, "run_dir": c.run_dir,
                    "mean": c.mean.mean, "ci": [c.mean.lo, c.mean.hi],
                    "diff": c.diff_mean,
                    "diff_ci": None if c.diff is None else [c.diff.lo, c.diff.hi],
                    "diff_ci_open": None if c.test is None else [c.test.lo_open, c.test.hi_open],
                    "changed": None if c.test is None else c.test.changed,
                    "level": c.level, "status": status(c, self.leader), "cheaper": c.cheaper,
                    "qualifies": c.qualifies, "margin_needed": c.margin_needed,
                    "questions_needed": c.questions_needed, "contender": c.contender,
                    "cost": c.cost, "costs": c.costs, "stages": c.stages,
                }
                for c in self.candidates
            ],
            "held_out": self.held_out,
            "undecided": [u.to_dict() for u in self.undecided],
        }


def fmt_cost(cost: float | None, by: str) -> str:
    """A cost as the selection shows it: ``p50_ms`` in ms, ``chunks`` whole, ``money`` in dollars."""
    if cost is None or cost != cost:
        return "-"
    if by == "p50_ms":
        return fmt_ms(cost)
    if by == "chunks":
        return str(int(cost))
    return f"{cost:.4f}"


def status(c, leader: int) -> str:
    """leader; in / out (a cheaper run that does / does not qualify at the margin);
    cheaper (no margin given); not cheaper (never a contender: the leader is better)."""
    if c.index == leader:
        return "leader"
    if not c.cheaper:
        return "not cheaper"
    if c.qualifies is None:
        return "cheaper"
    return "in" if c.qualifies else "out"


def _labels(runs: list[Run]) -> list[str]:
    """Each run's label, as every command names it (:mod:`receval.results.labels`)."""
    return run_labels(runs)


STAGED = ("transform", "retriever", "rerank")  # the config groups whose components run per question
#: Settings that change a stage's work, not only its scores: which model, where it runs, how many pairs.
WORK_KEYS = ("backend", "base_url", "first_size", "max_length", "passage_words", "samples")


def stage_tree(run: Run) -> Tree:
    """The stages a run runs, for the cost rules of :mod:`receval.stats.cheaper`: each
    component of ``transform``, ``retriever`` (a fused one's members and fusion) and
    ``rerank`` as (group, kind, the settings that change its work: its model and
    :data:`WORK_KEYS`), and the chunks it indexed. Settings that change scores, not
    work (k1, b, weights), are left out: runs differing only in them run the same stages."""
    tree: Tree = Tree()

    def walk(group: str, node) -> None:
        if isinstance(node, str):
            tree[(group, node)] += 1
        elif isinstance(node, dict) and node.get("kind"):
            models = tuple(sorted((str(k), str(v)) for k, v in node.items()
                                  if ("model" in str(k) or k in WORK_KEYS) and isinstance(v, str | int | float)))
            tree[(group, str(node["kind"]), models)] += 1
            for value in node.values():
                if isinstance(value, dict) and "kind" in value:
                    walk(group, value)
                elif isinstance(value, list):
                    for item in value:
                        walk(group, item)

    config = nodes_of(run)  # members as the run wrote them, filled: {kind: dense} is dense's defaults
    for group in STAGED:
        walk(group, config.get(group))
    tree[("chunks", run.n_chunks)] += 1
    return tree


def _differences(runs: list[Run], leader: int, others: list[int], metric: str) -> np.ndarray:
    """``(n_questions, len(others))`` per-question ``run - leader`` over the questions
    every run scores (the leader's order)."""
    base = runs[leader]
    scored = ~np.isnan(base.values(metric))
    columns = []
    for i in others:
        _, rows_b, _, _ = align(base, runs[i], option=None)  # different question sets: an error
        b = runs[i].values(metric)[rows_b]
        scored &= ~np.isnan(b)
        columns.append(b)
    if not scored.any():
        raise RunError(f"no question is scored on {metric} by every run; nothing to compare")
    a = base.values(metric)[scored]
    return np.column_stack([col[scored] - a for col in columns]) if columns else np.empty((int(scored.sum()), 0))


def _cost_by(prefer: str, all_costs: list[dict], notes: list[str]) -> str:
    """The cost ranked by: ``money`` falls back to ``p50_ms`` when it says nothing."""
    if prefer != "money":
        return prefer
    unknown = [i for i, c in enumerate(all_costs) if c["money"] is None]
    if unknown:
        shown = ", ".join(f"#{i}" for i in unknown)
        notes.append(
            f"money: no cost recorded ({COLUMN} columns) for {shown}, which call paid "
            "APIs; ranking by p50_ms instead"
        )
        return "p50_ms"
    if not any(c["money"] for c in all_costs):
        notes.append("money: no cost recorded (every run is local: $0); ranking by p50_ms instead")
        return "p50_ms"
    return "money"


def choose(
    runs: list[Run], metric: str, prefer: str, margin: float | None, boot: BootstrapConfig,
    split: str | None = None, names: Mapping[str, str] | None = None,
) -> Selection:
    """Leader, cheaper runs, which qualify, and the chosen run among ``runs`` (already
    filtered to the selection split); see the module docstring. Errors name ``prefer``
    and ``margin`` as ``names`` maps them (:func:`receval.core.errors.named`)."""
    if prefer not in PREFERENCES:
        raise RecevalError(f"{named(names, 'prefer')} {prefer}: use one of {', '.join(PREFERENCES)}")
    if margin is not None and not (np.isfinite(margin) and margin >= 0):
        raise RecevalError(
            f"{named(names, 'margin')} {margin}: use a value >= 0, in {measure_label(metric)} units "
            "(how much worse than the leader still counts as not worse)"
        )
    labels = _labels(runs)
    items = []
    for run in runs:
        values = run.values(metric)
        rows = np.flatnonzero(~np.isnan(values))
        if rows.size == 0:
            raise RunError(f"{run.run_dir}: no question scored on {metric} in this split")
        items.append((rows_key(run.ids_digest, rows), values[rows]))
    means = grouped_intervals(items, boot)
    mean_values = [m.mean for m in means]
    all_costs = [costs_of(run) for run in runs]
    notes: list[str] = []
    cost_by = _cost_by(prefer, all_costs, notes)
    missing = [i for i, c in enumerate(all_costs) if c[cost_by] is None]
    if missing and len(runs) > 1:  # a lone run is chosen whatever it costs
        raise RunError(
            f"{named(names, 'prefer')} {cost_by}: {runs[missing[0]].run_dir} has no {cost_by} recorded; choose "
            f"another of {', '.join(PREFERENCES)}"
        )
    costs = [float("nan") if c[cost_by] is None else float(c[cost_by]) for c in all_costs]
    stages = [n_stages(run) for run in runs]
    if len(runs) == 1:
        order = CostOrder(cost_by, costs, boot.level)
    else:
        timed = latencies(runs, option=f"{named(names, 'prefer')} p50_ms") if cost_by == "p50_ms" else None
        trees = [stage_tree(run) for run in runs] if cost_by == "p50_ms" else None
        repeats = [run.info.get("config_hash") or str(run.run_dir) for run in runs]
        order = cost_order(costs, cost_by, boot, timed, trees, repeats)
    best = max(mean_values)
    leader = order.cheapest(
        [i for i, m in enumerate(mean_values) if m >= best - SAME_MEAN], mean_values, stages
    )
    others = [i for i in range(len(runs)) if i != leader]
    diffs = _differences(runs, leader, others, metric)
    cheaper = [i for i in others if order.cheaper(i, leader)]
    tested = [others.index(i) for i in cheaper]
    verdicts = dict(zip(cheaper, noninferiority.verdicts(diffs[:, tested], margin, boot))) if cheaper else {}
    candidates = []
    for i, run in enumerate(runs):
        candidate = Candidate(
            index=i, label=labels[i], run_dir=str(run.run_dir), mean=means[i],
            diff_mean=None if i == leader else float(np.mean(diffs[:, others.index(i)])),
            cheaper=i in verdicts, contender=i == leader, cost=all_costs[i][cost_by], stages=stages[i],
            costs=all_costs[i],
        )
        if i in verdicts:
            v = verdicts[i]
            candidate.diff, candidate.test, candidate.level = v.diff, v.test, v.level
            candidate.margin_needed = v.margin_needed
            candidate.qualifies, candidate.questions_needed = v.qualifies, v.questions_needed
            candidate.contender = bool(v.qualifies)
        candidates.append(candidate)
    contenders = [c.index for c in candidates if c.contender]
    chosen = order.cheapest(contenders, mean_values, stages)
    if order.noise_rule() and len(runs) > 1:
        notes.append(order.noise_rule())
    unsure = undecided(runs, [metric], metric, 1.0 - boot.level, kinds=question_counts(runs, metric)["kinds"],
                       n_resamples=boot.n_resamples, seed=boot.seed)
    notes += [u.text for u in unsure]
    result = Selection(
        metric=metric, split=split, prefer=prefer, cost_by=cost_by, margin=margin, boot=boot,
        candidates=candidates, leader=leader, chosen=chosen, why="", n_questions=diffs.shape[0],
        notes=notes, undecided=unsure,
    )
    result.why = _why(result, order, named(names, "margin"))
    return result


def _why(s: Selection, order: CostOrder, margin_option: str = "margin") -> str:
    """One sentence: why the chosen run is the choice."""
    best = s.candidates[s.chosen]
    tested = s.tested
    measurably = " measurably" if order.medians is not None else ""
    if len(s.candidates) == 1:
        return "the only run: nothing to compare it with"
    if not tested:
        return f"the leader (best mean); no run is{measurably} cheaper than it by {s.cost_by}"
    if s.margin is None:
        if len(tested) == 1:
            return (f"the leader (best mean); no {margin_option} given, so the one cheaper run cannot be "
                    "shown not worse (its smallest qualifying margin is in the table)")
        return (f"the leader (best mean); no {margin_option} given, so none of the {len(tested)} cheaper "
                "runs can be shown not worse (each one's smallest qualifying margin is in the table)")
    qualified = [c for c in tested if c.qualifies]
    if not qualified:
        return (f"the leader (best mean); no cheaper run is shown not worse at margin {s.margin:g} "
                f"({len(tested)} tested)")
    how = (f"shown not worse than the leader #{s.leader} at margin {s.margin:g} (Holm interval "
           f"[{best.diff.lo:+.3f}, {best.diff.hi:+.3f}] lies above {-s.margin:g}) and cheapest "
           f"of the {len(qualified) + 1} contenders by {s.cost_by}")
    tied = [c for c in s.candidates if c.contender and c.index != s.chosen and not order.cheaper(s.chosen, c.index)]
    if tied:
        how += (f" ({fmt_cost(best.cost, s.cost_by)}), tied on cost with {', '.join(f'#{c.index}' for c in tied)}: "
                "the higher mean, then fewer stages, then the smaller index")
    else:
        how += f" ({fmt_cost(best.cost, s.cost_by)})"
    return how


def held_out(
    run: Run, split: str, metric: str, boot: BootstrapConfig, selection_mean: float, option: str = "report_on"
) -> dict:
    """The chosen run scored once on the held-out ``split`` questions (read from its
    stored rows: the run scored every question; selection never read these); a split it
    scores no question of is an error naming ``option``."""
    (kept,) = filters.filter_questions([run], [("split", split)])
    values = kept.values(metric)
    rows = np.flatnonzero(~np.isnan(values))
    if rows.size == 0:
        raise RunError(f"{option} {split}: {run.run_dir} scores no {split} question on {metric}")
    (interval,) = grouped_intervals([(rows_key(kept.ids_digest, rows), values[rows])], boot)
    return {
        "split": split, "run_dir": str(run.run_dir), "n_questions": int(rows.size),
        "mean": interval.mean, "ci": [interval.lo, interval.hi],
        "selection_mean": selection_mean, "overstated": selection_mean - interval.mean,
    }

