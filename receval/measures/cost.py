"""What a run's paid stages cost: per-question money columns and the one-off index cost.

Prices are configuration, never built in: ``cost.<stage>.per_1k_requests``,
``cost.<stage>.per_1m_input_tokens`` and ``cost.<stage>.per_1m_output_tokens`` (US
dollars), given on the command line as ``+cost.rerank.per_1k_requests=2``. A stage is
named as in the ``latency_ms.<stage>`` columns (``rerank``, ``dense``...).

Per question, a stage's requests and tokens come from its ``question_counts``
(``requests.<stage>``, ``input_tokens.<stage>``, ``output_tokens.<stage>``: the
response's ``usage`` where the API gives one, else counted by :func:`estimate_tokens`
and flagged ``tokens_estimated`` in ``run.json``); a stage that reports no per-question
requests is charged its search API calls spread evenly over the questions.
Columns: ``cost_usd.<stage>`` per priced stage and ``cost_usd`` (their sum).

The index cost is what embedding the corpus once costs through a priced remote
encoder (requests and estimated tokens of every chunk text), whether or not this
run found the embeddings in the cache: it is paid once per corpus, not per question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
from omegaconf import DictConfig, OmegaConf

from receval.clients.calls import estimate_tokens  # its home: the usage rule beside it
from receval.core.errors import ConfigError
from receval.core.vocabulary import COST
from receval.schema import problems as schema_problems
from receval.schema import range_, unknown_key


@dataclass
class StagePrices:
    """The prices of one stage, ``cost.<stage>``, in US dollars. Above a million dollars
    per unit a price is a typo, and money per question stays far from overflow."""

    per_1k_requests: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))
    per_1m_input_tokens: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))
    per_1m_output_tokens: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))


PRICES = tuple(f.name for f in fields(StagePrices))
COLUMN = COST  # the per-question money column (receval.core.vocabulary)
COUNTS = ("requests", "input_tokens", "output_tokens")


def prices_of(node, stages: list[str] | None = None) -> dict[str, dict[str, float]]:
    """``cfg.cost`` checked: stage -> {price name: dollars}; a ConfigError naming each bad key.
    With ``stages`` (:func:`stage_names` of the built run), a stage must be one of them:
    a misspelt stage would otherwise be priced at nothing."""
    if node is None:
        return {}
    data = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
    if not isinstance(data, dict):
        raise ConfigError(f"cost={data!r}: give prices per stage, e.g. +cost.rerank.per_1k_requests=2")
    problems, out = [], {}
    for stage, prices in data.items():
        if stages is not None and stage not in stages:
            problems.append(unknown_key("cost", str(stage), stages, "this run", noun="stage"))
            continue
        if not isinstance(prices, dict):
            problems.append(f"cost.{stage}={prices!r}: give named prices, e.g. +cost.{stage}.per_1k_requests=2")
            continue
        found = schema_problems(StagePrices, prices, f"cost.{stage}")
        problems += found
        if not found:
            out[stage] = {name: float(value) for name, value in prices.items()}
    if problems:
        raise ConfigError(problems)
    return out


def stage_names(retriever) -> list[str]:
    """The stages a run of ``retriever`` times, as its ``latency_ms.<stage>`` columns name
    them (:func:`receval.retrievers.base.search`): a query transform's own stages
    (``transform``; multi-query's ``fusion``), a fused retriever's members and ``fusion``,
    or the retriever's own name; ``rerank`` after a re-ranker; ``select``
    (:meth:`receval.retrievers.base.Stage.timed`)."""
    return list(dict.fromkeys(retriever.timed() + ["select"]))


def question_costs(prices: dict, counts: dict[str, np.ndarray], stages: dict, n_questions: int) -> dict[str, list]:
    """``cost_usd.<stage>`` per priced stage and their sum ``cost_usd``, per question ({} if unpriced)."""
    if not prices or not n_questions:
        return {}
    total = np.zeros(n_questions)
    out = {}
    for stage, price in prices.items():
        requests = counts.get(f"requests.{stage}")
        if requests is None:
            calls = (stages.get(stage) or {}).get("search_api_calls", 0)
            requests = np.full(n_questions, calls / n_questions)
        money = requests * price.get("per_1k_requests", 0.0) / 1e3
        money = money + counts.get(f"input_tokens.{stage}", 0.0) * price.get("per_1m_input_tokens", 0.0) / 1e6
        money = money + counts.get(f"output_tokens.{stage}", 0.0) * price.get("per_1m_output_tokens", 0.0) / 1e6
        out[f"{COLUMN}.{stage}"] = np.asarray(money, dtype=np.float64)
        total = total + out[f"{COLUMN}.{stage}"]
    out[COLUMN] = total
    return {name: values.astype(float).tolist() for name, values in out.items()}


def remote_encoders(retriever) -> dict[str, object]:
    """Stage name -> encoder, for every stage (member, re-ranker's model) encoding over an API."""
    found = {}
    for part in _parts(retriever):
        encoder = part.encoder
        if encoder is not None and getattr(encoder, "url", None):  # an HttpEncoder (no import of it here)
            found[part.name] = encoder
    return found


def index_cost(prices: dict, retriever, texts: list[str]) -> dict:
    """The one-off cost of embedding ``texts`` through each priced remote encoder."""
    stages, total = {}, 0.0
    tokens = None
    for stage, encoder in remote_encoders(retriever).items():
        price = prices.get(stage)
        if not price:
            continue
        tokens = estimate_tokens(texts).sum() if tokens is None else tokens
        requests = math.ceil(len(texts) / max(int(getattr(encoder, "batch_size", 1) or 1), 1))
        money = requests * price.get("per_1k_requests", 0.0) / 1e3 + tokens * price.get("per_1m_input_tokens", 0.0) / 1e6
        stages[stage] = {"requests": requests, "input_tokens": int(tokens), "tokens_estimated": True, "usd": money}
        total += money
    return {"usd": total, "stages": stages} if stages else {}


def _parts(stage):
    """The stage and the stages inside it (:meth:`~receval.retrievers.base.Stage.children`)."""
    yield stage
    for child in stage.children():
        yield from _parts(child)
