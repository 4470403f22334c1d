"""The judging pool of stored runs: the (question, unit) pairs in the top ``depth`` of any
run given that carry no label, with how many runs retrieved each and its best rank.

Two designs:

- depth pooling (TREC's): every such pair is a hole to judge. A depth-d pool decides the
  measures that read only the top d (:data:`DEPTH_DECIDES`) for the runs pooled; recall,
  ap, ndcg and rprec also count the relevant units below d, which it leaves unlabelled
  (counted not relevant).
- budgeted sampling (``budget``): at most ``budget`` pairs drawn from the top ``depth``
  by a stratified design with known inclusion probabilities
  (:mod:`receval.stats.sampling`); each hole line records its ``inclusion``
  probability, its ``stratum`` and the number ``drawn`` from that stratum, so that
  ``report --labels`` estimates the measures from the judged sample
  (:mod:`receval.stats.estimators`).

A seeded sample of already-labelled pairs can join either (``calibrate``), marked with
their known grade, so a judge's agreement with the known labels can be measured on pairs
it judges blind. Each question's labelled units (grade >= 1) follow as ``reference``
lines, never judged: the one-shot judge compares a hole with them. Every run pooled is
described by a ``run`` line (its LLM stages: the judge warns when it grades runs it
helped make). Nothing is written into the runs. Runs of different datasets (their
fingerprints differ, or one question id holds two texts) are refused: their question
ids would pool two datasets' questions as one.

Roles: ``hole`` (to judge), ``calibration`` (judged blind, compared with
``known_grade``), ``reference`` (a known relevant unit, with ``known_grade``), ``run``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.core.endpoints import endpoint_id
from receval.core.errors import RecevalError
from receval.core.secrets import cut
from receval.results.identity import mixed_datasets
from receval.results.labels import run_labels
from receval.results.stored import Run
from receval.stats.sampling import draw, importance, inclusion_probabilities, rank_weights, stratify

#: What a depth-d pool decides for the runs pooled (every unit of their top d judged).
DEPTH_DECIDES = "hit@k and precision@k for k <= {d}"
DEFAULT_MEASURES = ("ap", "ndcg@10")  # what a budget serves unless told
LLM_GROUPS = ("transform", "rerank")  # stages of a run that may call a chat model


@dataclass(frozen=True)
class PoolPair:
    """One pool line. ``known``: the stored grade of a calibration or reference pair;
    ``inclusion``, ``stratum``, ``drawn``: a sampled hole's design (None in a depth pool)."""

    question_id: str
    question: str
    id: str
    n_runs: int
    best_rank: int | None  # 1-based; None: no run retrieved it at this depth
    known: int | None = None
    role: str = "hole"
    depth: int | None = None
    inclusion: float | None = None
    stratum: int | None = None
    drawn: int | None = None

    def to_dict(self, text: str | None) -> dict:
        out = {"question_id": self.question_id, "question": self.question, "id": self.id, "text": text,
               "n_runs": self.n_runs, "best_rank": self.best_rank, "role": self.role}
        if self.known is not None:
            out["known_grade"] = self.known
        if self.role == "hole" and self.depth is not None:
            out["depth"] = self.depth
        if self.inclusion is not None:
            out.update(inclusion=self.inclusion, stratum=self.stratum, drawn=self.drawn, design="budget")
        return out


@dataclass(frozen=True)
class Pooled:
    """The pool's lines, and what the design says of itself."""

    pairs: list[PoolPair]
    runs: list[dict]  # one ``run`` line per run pooled
    depth: int
    universe: int  # unlabelled pairs in the top ``depth`` (a budget draws from them)
    budget: int | None = None
    certain: int = 0  # budget: pairs judged for certain (inclusion 1)


def llm_stages(run: Run) -> list[dict]:
    """A stored run's remote stages (its saved transform and re-ranker nodes with a
    base_url and a model: LLM transforms and re-rankers, rerank APIs): stage, kind, model
    and the endpoint's id (:func:`receval.core.endpoints.endpoint_id`, never the URL)."""
    config = run.config if isinstance(run.config, dict) else {}
    out = []
    for group in LLM_GROUPS:
        node = config.get(group)
        if isinstance(node, dict) and node.get("base_url") and node.get("model"):
            out.append({"stage": group, "kind": str(node.get("kind", "?")), "model": str(node["model"]),
                        "endpoint": endpoint_id(str(node["base_url"]))})
    return out


def _collect(runs: list[Run], depth: int, weights: np.ndarray | None):
    """Per question its text and labels; per (question, unit) in the top ``depth``:
    [runs, best rank, sum of rank weights, sum of squared weights]."""
    texts: dict[str, str] = {}
    asked: dict[str, str] = {}  # question id -> the run that gave its text
    labels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], list] = {}
    for run in runs:
        columns = run.table.select(["question_id", "question", "relevant", "grades", "retrieved"]).to_pydict()
        for qid, text, relevant, grades, retrieved in zip(*columns.values()):
            if text and texts.get(qid) and texts[qid] != text:
                raise RecevalError(
                    f"question {cut(repr(qid))} is {cut(repr(texts[qid]), 60)} in {asked[qid]} and "
                    f"{cut(repr(text), 60)} in {run.run_dir}: these runs asked different questions under one id "
                    "(another dataset, or another version of it); pool the runs of one dataset at a time"
                )
            if text and not texts.get(qid):
                texts[qid], asked[qid] = text, str(run.run_dir)
            texts.setdefault(qid, "")
            labels.setdefault(qid, {}).update(zip(relevant or [], grades or []))
            for rank, uid in enumerate((retrieved or [])[:depth], 1):
                entry = seen.setdefault((qid, uid), [0, rank, 0.0, 0.0])
                entry[0] += 1
                entry[1] = min(entry[1], rank)
                if weights is not None:
                    entry[2] += weights[rank - 1]
                    entry[3] += weights[rank - 1] ** 2
    return texts, labels, seen


def pool(runs: list[Run], depth: int | None = 10, calibrate: int = 0, seed: int = 0, budget: int | None = None,
         measures: tuple[str, ...] = DEFAULT_MEASURES) -> Pooled:
    """Holes first (question in the runs' order, then best rank, then id), then the
    calibration sample (``calibrate`` labelled pairs drawn without replacement, seeded),
    then the references, then one line per run. ``depth`` None: everything the runs
    retrieved. ``budget``: draw at most that many holes (module docstring), seeded."""
    if depth is None:
        depth = max((len(r or []) for run in runs for r in run.table.column("retrieved").to_pylist()), default=1)
    if depth < 1:
        raise RecevalError(f"--depth {depth}: give the number of top units pooled per run, >= 1 (e.g. 10)")
    if calibrate < 0:
        raise RecevalError(f"--calibrate {calibrate}: give a number of labelled pairs >= 0")
    if mixed := mixed_datasets(runs):  # the same question ids would pool two datasets' questions as one
        raise RecevalError(f"{mixed}; pool the runs of one dataset at a time")
    if budget is not None and budget < 1:
        raise RecevalError(f"--budget {budget}: give the number of pairs to judge, >= 1 (e.g. the holes of a depth-10 pool)")
    try:
        weights = rank_weights(list(measures), depth) if budget is not None else None
    except ValueError as error:
        raise RecevalError(f"--measures: {error}") from None
    texts, labels, seen = _collect(runs, depth, weights)
    order = {qid: i for i, qid in enumerate(texts)}
    keys = [key for key in seen if key[1] not in labels.get(key[0], {})]
    design: dict[tuple[str, str], tuple[float, int, int]] = {}
    certain = 0
    if budget is not None and keys:
        stats = np.asarray([seen[key][2:] for key in keys], dtype=np.float64)
        mean = stats[:, 0] / len(runs)
        spread = np.sqrt(np.maximum(stats[:, 1] / len(runs) - mean**2, 0.0))
        pi = inclusion_probabilities(importance(mean, spread, len(runs)), budget)
        strata = stratify(pi)
        drawn, rate, sizes = draw(strata, pi, budget, np.random.default_rng(seed))
        certain = int((strata == 0).sum())
        design = {key: (float(rate[i]), int(strata[i]), int(sizes[strata[i]])) for i, key in enumerate(keys) if drawn[i]}
        keys_out = list(design)
    else:
        keys_out = keys
    holes = []
    for qid, uid in keys_out:
        n, rank = seen[qid, uid][:2]
        inclusion, stratum, n_drawn = design.get((qid, uid), (None, None, None))
        holes.append(PoolPair(qid, texts[qid], uid, n, rank, depth=depth, inclusion=inclusion, stratum=stratum,
                              drawn=n_drawn))
    holes.sort(key=lambda p: (order[p.question_id], p.best_rank, p.id))
    known = sorted((qid, uid, grade) for qid, units in labels.items() for uid, grade in units.items())

    def line(i: int, role: str) -> PoolPair:
        qid, uid, grade = known[i]
        n, rank = seen.get((qid, uid), (0, None))[:2]
        return PoolPair(qid, texts[qid], uid, n, rank, known=int(grade), role=role)

    sample = []
    if calibrate:
        if not known:
            raise RecevalError("--calibrate: the runs hold no labelled pair to sample")
        picked = np.random.default_rng(seed).choice(len(known), size=min(calibrate, len(known)), replace=False)
        sample = [line(i, "calibration") for i in sorted(picked)]
    described = [{"role": "run", "run": label, "llm": llm_stages(run)} for run, label in zip(runs, run_labels(runs))]
    return Pooled(holes + sample + [line(i, "reference") for i in range(len(known))], described, depth, len(keys),
                  budget, certain)

