"""Dataclass schemas for every config group, registered in Hydra's ConfigStore.

``conf/config.yaml`` starts its defaults list with ``receval_schema``, so every value
is typed. :func:`check` walks a composed config against the schemas before any work
starts (:mod:`receval.schema`): a key no schema has (``+chunking.max_word=40``, which
Hydra force-adds) is refused with the valid keys, and every number must lie in the
range declared beside its field.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from enum import StrEnum
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from receval import schema

from receval.run import components
from receval.run.components import ChunkingConfig, RerankConfig, RetrieverConfig, TransformConfig
from receval.core.errors import ConfigError
from receval.run.hydra_internals import share_config_store
from receval.core.settings import MAX_RESAMPLES, ApiFields, BootstrapConfig, BootstrapMethod  # noqa: F401  (the run schema's bootstrap group)
from receval.retrievers.text import CjkSplit, Language
from receval.schema import INT32, RETRIES, SEED, THREADS, WORDS, range_


class DatasetFormat(StrEnum):
    folder = "folder"  # pages/*.md + questions.jsonl
    beir = "beir"  # corpus.jsonl, queries.jsonl, qrels/<split>.tsv
    ir_datasets = "ir_datasets"  # an id of the ir_datasets package, read from its local store


@dataclass
class DatasetConfig:
    name: str = "library"
    format: DatasetFormat = DatasetFormat.folder
    path: Optional[str] = MISSING  # null: the built-in library
    questions: Optional[str] = None  # null: <path>/questions.jsonl
    split: Any = None  # beir: null = every qrels/<split>.tsv, a name, or a list of names
    title: bool = True  # beir: prepend each document's title to its text
    # a TSV (header query-id<TAB>corpus-id) of units dropped from each question's ranking and never scored
    excluded: Optional[str] = None
    exclude_self: bool = False  # drop each question's own id from its ranking (BEIR ArguAna)
    nuggets: Optional[str] = None  # a JSONL of each question's nuggets ({"qid", "nuggets": [{"text", "importance"}]})


@dataclass
class IrDatasetsConfig(DatasetConfig):
    """``dataset=ir_datasets``: the ``dataset`` node with the package's dataset ``id``
    (``beir/scifact/test``; its last part names the split). A subclass, merged in by
    ``conf/dataset/ir_datasets.yaml`` (``dataset/base_ir_datasets``), so the other formats'
    saved configs, and their identity hashes, do not gain the key."""

    id: str = MISSING


DATASET_SCHEMAS = {DatasetFormat.ir_datasets.value: IrDatasetsConfig}  # format -> its own schema


@dataclass
class TokenizerConfig:
    """The lexical retrievers' one tokenizer (:mod:`receval.retrievers.text`)."""

    stopwords: bool = False
    stem: bool = False
    language: Language = Language.english  # the Snowball stemmer and stopword list
    cjk: CjkSplit = CjkSplit.bigram  # Han, kana and Hangul runs: overlapping character bigrams, or off
    subword: Optional[str] = None  # a local tokenizer.json whose tokens replace words (tokenizers package)


@dataclass
class MetricsConfig:
    # trec_eval's largest cutoff is 1000; ten times that is past any use
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10], metadata=range_(1, 10_000, hint="each at most depth"))
    # a local tokenizer.json whose tokens count a token budget (hit@300tok); null: words, as chunking.max_words counts
    tokenizer: Optional[str] = None


@dataclass
class ObjectiveConfig:
    metric: str = "rr"  # what a run returns to a Hydra sweeper (Optuna): this measure's mean
    split: Optional[str] = "dev"  # over this split's questions; null: all (receval/cli/objective.py)


@dataclass
class RelevanceConfig:
    # share of an evidence span the top chunks must cover (receval.measures.coverage)
    coverage: float = field(default=0.5, metadata=range_(0, 1, low_open=True))
    # share of a nugget's content words the retrieved text must hold to support it (receval.measures.nuggets)
    nugget_coverage: float = field(default=0.75, metadata=range_(0, 1, low_open=True))


@dataclass
class TimingConfig:
    """How a run's latencies are measured (:func:`receval.retrievers.base.timed_search`);
    part of its saved config, not of its identity (:mod:`receval.results.identity`)."""

    # each question timed this many times, the passes interleaved (1..n, then 1..n again);
    # its latency is their median. Remote answers are this run's own, never asked again
    repeats: int = field(default=1, metadata=range_(1, 100, hint="1: timed once; 3-9 narrow a noisy clock"))


@dataclass
class RecevalConfig:
    """One run. ``chunking``, ``retriever`` and ``rerank`` are component nodes, typed by
    their group's base (:class:`receval.run.components.RetrieverConfig`, ...: Hydra's
    ``retriever: RetrieverConfig = MISSING`` pattern); each option of a group brings its
    own schema, a subclass (``base_<kind>``, see :mod:`receval.run.components`), which
    OmegaConf then holds the node as. A node given as a plain mapping over the base (no
    option's schema merged first) is refused by OmegaConf with the key it does not know."""

    name: Optional[str] = None  # what reports call the run (conf/stage/* set it); null: named by its settings
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    chunking: ChunkingConfig = MISSING  # a chunker node (receval/chunking/)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    retriever: RetrieverConfig = MISSING
    rerank: Optional[RerankConfig] = None  # null: the first stage's ranking is final
    transform: Optional[TransformConfig] = None  # null: the first stage searches with the question itself
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    relevance: RelevanceConfig = field(default_factory=RelevanceConfig)
    # chunks kept per question before collapsing to sections; beyond the chunks it is capped
    depth: int = field(default=10, metadata=range_(1, INT32, hint="capped at the run's chunks"))
    # questions scored together; above 1, latency is amortised (memory is bounded by the score block)
    search_batch: int = field(default=1, metadata=range_(1, 1_000_000))
    cache_dir: Optional[str] = ".cache/receval"  # chunks, token counts, embeddings; null: off
    cost: Any = field(default_factory=dict)  # prices per stage: +cost.rerank.per_1k_requests=2 (receval/measures/cost.py)
    timing: TimingConfig = field(default_factory=TimingConfig)  # timing.repeats=5: each latency the median of 5


# receval's sweeper (receval/hydra_plugin): Hydra's basic sweeper's settings
SWEEPER = {"_target_": "hydra_plugins.receval_sweeper.RecevalSweeper", "max_batch_size": None, "params": None}


#: How conf/'s dense options name their default backend (:func:`default_dense_backend`).
DENSE_BACKEND = "${receval_dense_backend:}"


def default_dense_backend() -> str:
    """``${receval_dense_backend:}``, the dense encoders' default backend: ``onnx`` (int8 on
    onnxruntime, 0.32x torch's time on SciFact, nDCG@10 within 0.004) where the onnx extra
    (onnxruntime and onnx) is installed, else ``local`` (torch). A run saves the backend it
    resolved (run.json's config, its identity and its label), and the two never share
    vectors: the embedding cache keys each by its encoder's identity, backend included."""
    return "onnx" if all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx")) else "local"


def register_resolvers() -> None:
    """``${receval_pid:}``: this process's id. Default output folders are named by the time
    to the microsecond *and* the process id: two commands started together can read the
    same microsecond (it happened in a test run), never the same process id on one machine.
    Cached like Hydra's ``now``, so every job of a sweep, on any launcher, sees the
    driver's value. ``${receval_dense_backend:}``: :func:`default_dense_backend`."""
    OmegaConf.register_new_resolver("receval_pid", lambda: os.getpid(), use_cache=True, replace=True)
    OmegaConf.register_new_resolver("receval_dense_backend", default_dense_backend, use_cache=True, replace=True)


def register() -> None:
    """The run schema and every component schema (``retriever/base_bm25``, ...) in Hydra's store."""
    from receval.run import components

    share_config_store()
    register_resolvers()
    ConfigStore.instance().store(name="receval_schema", node=RecevalConfig)
    ConfigStore.instance().store(group="dataset", name="base_ir_datasets", node=IrDatasetsConfig)
    ConfigStore.instance().store(group="hydra/sweeper", name="receval", node=SWEEPER, provider="receval")
    components.register_schemas()


def structured_run(data: dict):
    """A plain run config (a stored run's) typed by :class:`RecevalConfig`: each group
    node is first typed by its option's schema (by its ``kind``), as Hydra's defaults
    list does when it composes; a plain mapping over a group's base would be refused.
    Raises ConfigError naming a group key its schema lacks or an unknown kind
    (:func:`receval.run.components.typed`), OmegaConf's error for any other key."""
    data = dict(data)
    dataset = data.get("dataset")
    if hasattr(dataset, "keys") and str(dataset.get("format")) in DATASET_SCHEMAS:
        data["dataset"] = OmegaConf.merge(OmegaConf.structured(DATASET_SCHEMAS[str(dataset["format"])]), dataset)
    for group in components.BASES:
        node = data.get(group)
        if hasattr(node, "keys") and "kind" in node:
            data[group] = components.typed(group, node, group)
    return OmegaConf.merge(OmegaConf.structured(RecevalConfig), data)


def config_dir() -> str:
    """The ``conf/`` folder: inside the installed package (``receval/conf``), or at the
    source root beside ``receval/``."""
    here = Path(__file__).resolve().parent.parent  # receval/ (this module is receval/run/config.py)
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return str(candidate)
    raise ConfigError(f"receval's conf/ folder is missing beside {here}; reinstall receval")


def check(cfg) -> None:
    """Every key known, every number in its range, and the values that must agree; all
    problems at once. ``cost.<stage>`` names are checked once the stages are built
    (:func:`receval.run.pipeline.check_config`)."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(
            [f"{key} is required and has no value: set it on the command line ({key}=...)" for key in missing]
        )
    problems = schema.problems(RecevalConfig, cfg)  # unknown keys, numbers out of range
    ks = list(cfg.metrics.ks)
    if not ks:
        problems.append("metrics.ks=[]: list cutoffs >= 1, e.g. [1,3,5,10]")
    elif cfg.depth >= 1 and max(ks) > cfg.depth:
        problems.append(
            f"metrics.ks={ks} has {max(ks)} > depth={cfg.depth}: a cutoff beyond the depth "
            "would score missing ranks; raise depth or drop that cutoff"
        )
    if len(set(ks)) != len(ks):
        problems.append(f"metrics.ks={ks} names a cutoff twice: list each once, e.g. {sorted(set(ks))}")
    try:
        from receval.run.metrics import parse_measure

        parse_measure(str(cfg.objective.metric))
    except ValueError as error:
        problems.append(f"objective.metric={cfg.objective.metric}: {error}")
    problems += components.tree_problems("chunking", cfg.chunking, "chunking")
    problems += components.tree_problems("retriever", cfg.retriever, "retriever")
    if cfg.get("rerank") is not None:
        problems += components.tree_problems("rerank", cfg.rerank, "rerank")
    if cfg.get("transform") is not None:
        problems += components.tree_problems("transform", cfg.transform, "transform")
    try:
        from receval.measures.cost import prices_of

        prices_of(cfg.get("cost"))
    except ConfigError as error:
        problems += list(error.problems)
    if problems:
        raise ConfigError(problems)


# ------------------------------------------------- synthetic questions (receval synth)


class SynthStyle(StrEnum):
    direct = "direct"  # the passage's own words
    paraphrase = "paraphrase"  # other words than the passage's
    multi = "multi"  # needs two passages


class SynthUnit(StrEnum):
    section = "section"
    chunk = "chunk"  # chunks cut by the chunking group


@dataclass
class SynthConfig(ApiFields):
    """``receval synth``'s settings: the endpoint (:class:`receval.core.settings.ApiFields`),
    the model and what is asked."""

    base_url: Optional[str] = MISSING  # API root before /chat/completions, e.g. http://localhost:11434/v1
    model: str = MISSING
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # NAME of the variable holding the key
    style: SynthStyle = SynthStyle.direct
    unit: SynthUnit = SynthUnit.section  # what one question is generated from
    per_section: int = field(default=1, metadata=range_(1, 1000))  # questions per section (or chunk)
    # at most this many sections (a seeded sample); null: all
    limit: Optional[int] = field(default=None, metadata=range_(1, INT32, null="every section"))
    temperature: float = field(default=0.0, metadata=range_(0, 2, hint="chat APIs take 0 to 2"))
    seed: int = field(default=0, metadata=range_(*SEED))  # sent to the API; also picks the sample and partners
    concurrency: int = field(default=4, metadata=range_(*THREADS))  # requests in flight (threads)
    # deprecated: the old name of retries (read as it, with a notice)
    max_retries: Optional[int] = field(default=None, metadata=range_(*RETRIES, null="retries holds it"))
    # stop after this many sections fail in a row; 0: never
    max_failures: int = field(default=10, metadata=range_(0, 1_000_000, hint="0: never stop"))
    # words of each passage put in a prompt (not chunking.max_words)
    passage_words: int = field(default=800, metadata=range_(*WORDS))
    # share of questions in split dev (the rest: test), by id hash
    dev_fraction: float = field(default=0.5, metadata=range_(0, 1))
    out: str = "questions.synthetic.jsonl"  # appended to, resumable
    # the answer cache's root (receval/clients/calls.py); null: RECEVAL_CACHE_DIR or .cache/receval
    cache_dir: Optional[str] = None


@dataclass
class SynthRunConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    chunking: ChunkingConfig = MISSING
    synth: SynthConfig = field(default_factory=SynthConfig)


def register_synth() -> None:
    share_config_store()
    register_resolvers()
    ConfigStore.instance().store(name="synth_schema", node=SynthRunConfig)
    ConfigStore.instance().store(group="dataset", name="base_ir_datasets", node=IrDatasetsConfig)


def synth_problems(cfg) -> list[str]:
    """``receval synth``'s keys and ranges (its chunking node's included); the
    values that must agree are :func:`receval.synth.job.check_config`'s."""
    return schema.problems(SynthRunConfig, cfg) + components.tree_problems("chunking", cfg.chunking, "chunking")


# ------------------------------------------------- judging a pool (receval judge)


class MissingLabel(StrEnum):
    skip = "skip"  # not compared
    zero = "zero"  # grade 0: the reference judged everything it did not list not relevant


@dataclass
class JudgeRunConfig:
    pool: str = MISSING  # the pool JSONL receval pool wrote
    out: str = "labels.jsonl"  # the labels JSONL (agreement beside it: <out>.agreement.json)
    force: bool = False  # replace an existing out
    reference: Optional[str] = None  # labels (qrels, BEIR tsv or labels JSONL) to measure agreement against
    reference_missing: MissingLabel = MissingLabel.skip  # a labelled pair the reference lacks: skip, or zero (not relevant)
    judge: components.JudgeConfig = MISSING


def register_judge() -> None:
    register_resolvers()
    components.register_schemas()
    ConfigStore.instance().store(name="judge_schema", node=JudgeRunConfig)


def judge_problems(cfg) -> list[str]:
    """``receval judge``'s keys and ranges, its judge node's included."""
    return schema.problems(JudgeRunConfig, cfg) + components.tree_problems("judge", cfg.judge, "judge")


def ranges_table() -> str:
    """Every number receval's configs hold, with its range (Markdown): the run's own keys,
    each component kind's, the prices of ``cost.<stage>`` and ``receval synth``'s."""
    from receval.measures.cost import StagePrices

    components.discover()
    rows = [(k, "", r, h) for k, r, h in schema.range_rows(RecevalConfig, "")]
    for group in ("chunking", "retriever", "retriever/fusion", "rerank", "transform", "judge"):
        for kind in components.kinds(group):
            kind_schema = components.entry(group, kind, group).schema
            rows += [(k, kind, r, h) for k, r, h in schema.range_rows(kind_schema, group.replace("/", "."))]
    rows += [(k, "", r, h) for k, r, h in schema.range_rows(StagePrices, "cost.<stage>")]
    rows += [(k, "", r, h) for k, r, h in schema.range_rows(SynthConfig, "synth")]
    lines = ["| key | kind | range | note |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {kind} | {r} | {h} |" for k, kind, r, h in rows]
    return "\n".join(lines) + "\n"
