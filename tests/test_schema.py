"""Issue 22, "nothing misspelt runs": every key a config names exists, every number lies in
the range declared beside its field (receval/schema.py), before anything is written.

The command-line cases run ``receval`` / ``receval synth`` in this
process (Hydra's real composition, receval's callbacks and sweeper), so they stay fast."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from receval import schema

from receval.run import components, config
from receval.run.config import RecevalConfig, SynthRunConfig, check, config_dir
from receval.measures.cost import StagePrices, stage_names
from receval.core.errors import ConfigError
from receval.run.pipeline import check_config

ROOT = Path(__file__).resolve().parent.parent
RUN_KEYS = "name, dataset, chunking, tokenizer, retriever, rerank, transform, bootstrap, metrics, objective, relevance, depth"


@pytest.fixture
def command(monkeypatch, tmp_path):
    """``receval [command] ARGS`` run in this process; returns (exit code, stderr
    lines, output folder). The folder is ``hydra.run.dir`` (``hydra.sweep.dir`` with ``-m``)."""
    from hydra.core.global_hydra import GlobalHydra

    # Hydra's logging setup closes every handler, pytest's capture too: left out here
    import hydra._internal.core_plugins.basic_launcher as launcher
    import hydra._internal.hydra as hydra_app
    import hydra.core.utils as hydra_utils
    from hydra.core.plugins import Plugins

    Plugins.instance()
    for module in (launcher, hydra_app, hydra_utils):
        monkeypatch.setattr(module, "configure_log", lambda *args, **kwargs: None)

    def run(*args: str, command: str = "run", capsys=None):
        if command == "run":
            from receval.cli.run import main
        else:
            from receval.synth.__main__ import main
        folder = tmp_path / "out"
        where = "hydra.sweep.dir" if "-m" in args else "hydra.run.dir"
        monkeypatch.setattr(sys, "argv", [f"receval {command}", f"{where}={folder}", *args])
        GlobalHydra.instance().clear()
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
        finally:
            GlobalHydra.instance().clear()
        return code, folder

    return run


def compose_with(*overrides: str, config: str = "config"):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(config, overrides=list(overrides))


# ------------------------------------------------------------------ misspelt keys

# (overrides, the key refused, the close match named, valid keys named)
MISSPELT = {
    "chunking": (["+chunking.max_word=20"], "chunking.max_word", "chunking.max_words", "kind, max_words, overlap, headings"),
    "retriever": (["+retriever.kl=0.9"], "retriever.kl", "retriever.k1", "kind, k1, b"),
    "top-level": (["+depht=20"], "depht", "depth", RUN_KEYS),
    "fusion": (["retriever=fused", "+retriever.fusion.kk=3"], "retriever.fusion.kk", "retriever.fusion.k", "kind, k, candidates"),
    "member": (["retriever=hybrid", "+retriever.members.0.kl=1"], "retriever.members[0].kl", "retriever.members[0].k1", "kind, k1, b"),
    "rerank": (["rerank=dense", "+rerank.first_sise=5"], "rerank.first_sise", "rerank.first_size", "first_size, model"),
    "bootstrap": (["+bootstrap.n_resample=50"], "bootstrap.n_resample", "bootstrap.n_resamples", "n_resamples, level, seed, method"),
    "metrics": (["+metrics.k=[1]"], "metrics.k", "metrics.ks", "ks"),
    "objective": (["+objective.metrc=rr"], "objective.metrc", "objective.metric", "metric, split"),
    "dataset": (["+dataset.splitt=dev"], "dataset.splitt", "dataset.split", "name, format, path, questions, split, title"),
    "price": (["+cost.bm25.per_1k_request=2"], "cost.bm25.per_1k_request", "cost.bm25.per_1k_requests",
              "per_1k_requests, per_1m_input_tokens, per_1m_output_tokens"),
}


def test_hydra_lets_a_plus_key_into_a_typed_node_which_is_why_receval_walks_the_schema():
    """Hydra force-adds ``+key`` past the struct flag, even inside a node typed by a dataclass."""
    cfg = compose_with("+chunking.max_word=20", "+depht=20")
    assert cfg.chunking.max_word == 20 and cfg.chunking.max_words == 120 and cfg.depht == 20


@pytest.mark.parametrize("case", MISSPELT)
@pytest.mark.slow
def test_a_misspelt_key_is_refused_with_the_valid_keys(case):
    overrides, key, close, valid = MISSPELT[case]
    with pytest.raises(ConfigError) as refused:
        check(compose_with(*overrides))
    (problem,) = refused.value.problems
    assert problem.startswith(f"{key} is not a key of ")
    assert f"did you mean {close}?" in problem and f"valid keys: {valid}" in problem


@pytest.mark.parametrize("plus", ["+", ""], ids=["with-plus", "without-plus"])
@pytest.mark.parametrize("case", ["chunking", "retriever", "top-level"])  # the (the rest: in-process above)
@pytest.mark.slow
def test_a_misspelt_key_on_the_command_line_writes_nothing(command, capsys, case, plus):
    """With or without "+", the same message (not Hydra's hint to force-add the key), exit 2,
    and no run folder, not even ``.hydra/``."""
    overrides, key, close, valid = MISSPELT[case]
    *rest, last = overrides
    code, folder = command(*rest, plus + last.lstrip("+"))
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and not folder.exists()
    assert line.startswith(f"receval: error: {key} is not a key of ") and f"did you mean {close}?" in line
    assert f"valid keys: {valid}" in line and "+" + key not in line


def test_hydra_is_left_as_it_was_once_a_command_ends(command, capsys):
    """The "did you mean" refusal lives inside a command: composing in the same process
    afterwards (a notebook, a test) gets Hydra's own exception, not an exit."""
    from hydra.errors import ConfigCompositionException

    assert command("chunking.max_word=20")[0] == 2
    capsys.readouterr()
    with pytest.raises(ConfigCompositionException, match="Could not override 'chunking.max_word'"):
        compose_with("chunking.max_word=20")


def test_a_key_under_a_null_group_says_to_choose_the_group_first(command, capsys):
    code, folder = command("rerank.first_size=5")  # rerank: none
    assert code == 2 and not folder.exists()
    assert capsys.readouterr().err.strip() == (
        "receval: error: rerank.first_size: rerank is null in this config, so it has no keys; "
        "choose one first (rerank=<option>)"
    )


@pytest.mark.parametrize("case", ["chunking", "price"])
@pytest.mark.slow
def test_every_job_of_a_sweep_is_checked_for_misspelt_keys_before_job_0(command, capsys, case):
    overrides, key, close, _ = MISSPELT[case]
    code, folder = command(*overrides, "depth=10,20", "-m")
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and not folder.exists()
    assert f"{key} is not a key" in line and f"did you mean {close}?" in line
    assert line.endswith("[sweep job 0 (depth=10), 1 (depth=20)]; nothing was run")


@pytest.mark.slow
def test_a_price_must_name_a_stage_of_the_run(command, capsys):
    """``cost.<stage>`` names a ``latency_ms.<stage>`` column of the run; a misspelt stage
    would be priced at nothing."""
    with pytest.raises(ConfigError) as refused:
        check_config(compose_with("+cost.rernak.per_1k_requests=2"))
    assert refused.value.problems == ["cost.rernak is not a stage of this run; valid stages: bm25, select"]
    with pytest.raises(ConfigError) as refused:
        check_config(compose_with("retriever=fused", "rerank=dense", "+cost.rernak.per_1k_requests=2"))
    assert refused.value.problems == [
        "cost.rernak is not a stage of this run; did you mean cost.rerank? "
        "valid stages: tfidf, bm25, fusion, rerank, select"
    ]
    check_config(compose_with("rerank=dense", "+cost.rerank.per_1k_requests=2"))  # a stage it has
    code, folder = command("+cost.rernak.per_1k_requests=2")
    assert code == 2 and not folder.exists()
    assert "cost.rernak is not a stage of this run" in capsys.readouterr().err


@pytest.mark.parametrize("overrides", [["retriever=bm25"], ["retriever=fused"], ["retriever=fused", "+cost.bm25.per_1k_requests=1"]])
@pytest.mark.slow
def test_the_stages_a_price_may_name_are_the_latency_columns_a_run_writes(tmp_path_factory, overrides):
    from conftest import run_of

    from receval.results import open_run
    from receval.retrievers import Context
    from receval.run.stages import build
    from receval.retrievers.text import Tokenizer

    cfg = compose_with(*overrides)
    run = open_run(run_of(tmp_path_factory, *overrides), skip=frozenset())
    columns = [name.split(".", 1)[1] for name in run.table.column_names if name.startswith("latency_ms.")]
    assert sorted(columns) == sorted(stage_names(build(cfg, Context(tokenizer=Tokenizer()))))


@pytest.mark.slow
def test_synth_refuses_a_misspelt_key_before_anything_is_written(command, capsys, tmp_path):
    common = ["synth.base_url=http://localhost:9/v1", "synth.model=m", f"synth.out={tmp_path / 'q.jsonl'}"]
    for override in ("+synth.modle=llama", "chunking.max_word=20"):
        code, folder = command(*common, override, command="synth")
        (line,) = capsys.readouterr().err.splitlines()
        assert code == 2 and not folder.exists() and not (tmp_path / "q.jsonl").exists()
        assert "is not a key of" in line and "did you mean" in line, line
    code, folder = command(*common, "synth.temperature=3", "synth.limit=5,10", "-m", command="synth")
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and not folder.exists()
    assert "synth.temperature=3.0: out of range; use a number in [0, 2]" in line and "nothing was run" in line


# ------------------------------------------------------------------ ranges

# (overrides, the message: key, value and range)
OUT_OF_RANGE = {
    "k1-huge": (["retriever.k1=1e308"], "retriever.k1=1e+308: out of range; use a number in [0, 1000] (1.2 is usual)"),
    "k1-nan": (["retriever.k1=nan"], "retriever.k1=nan: out of range; use a number in [0, 1000]"),
    "b": (["retriever.b=1.5"], "retriever.b=1.5: out of range; use a number in [0, 1]"),
    "rrf-k-huge": (["retriever=fused", "retriever.fusion.k=1e300"],
                   "retriever.fusion.k=1e+300: out of range; use a number in [0, 1000000] (60 is usual)"),
    "rrf-k-inf": (["retriever=fused", "retriever.fusion.k=inf"], "retriever.fusion.k=inf: out of range"),
    "weights-huge": (["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[1e308,1e308]"],
                     "retriever.fusion.weights[0]=1e+308: out of range; use a number in [0, 1000000]"),
    "weights-negative": (["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[-1,1]"],
                         "retriever.fusion.weights[0]=-1.0: out of range; use a number in [0, 1000000]"),
    "candidates": (["retriever=fused", "retriever.fusion.candidates=0"],
                   "retriever.fusion.candidates=0: out of range; use an integer in [1, 100000]"),
    "member-k1": (["retriever=hybrid", "retriever.members.0.k1=-1"], "retriever.members[0].k1=-1.0: out of range"),
    "first-size": (["rerank=dense", "rerank.first_size=0"], "rerank.first_size=0: out of range; use an integer in [1, 100000]"),
    "batch-size": (["retriever=dense", "retriever.batch_size=0"], "retriever.batch_size=0: out of range; use an integer in [1, 100000]"),
    "max-words": (["chunking.max_words=0"], "chunking.max_words=0: out of range; use an integer in [1, 1000000], or null for whole sections"),
    "overlap": (["chunking.overlap=-1"], "chunking.overlap=-1: out of range; use an integer in [0, 1000000]"),
    "sentence-overlap": (["chunking=sentences", "chunking.overlap=-1"], "chunking.overlap=-1: out of range; use an integer in [0, 10000]"),
    "max-tokens": (["chunking=tokens", "chunking.max_tokens=4"],
                   "chunking.max_tokens=4: out of range; use an integer in [8, 1000000], or null for the model's limit"),
    "ks": (["metrics.ks=[0,3]"], "metrics.ks[0]=0: out of range; use an integer in [1, 10000]"),
    "depth": (["depth=0"], "depth=0: out of range; use an integer in [1, 2147483647]"),
    "search-batch": (["search_batch=0"], "search_batch=0: out of range; use an integer in [1, 1000000]"),
    "level": (["bootstrap.level=1"], "bootstrap.level=1.0: out of range; use a number in (0, 1)"),
    "resamples": (["bootstrap.n_resamples=2000000"], "bootstrap.n_resamples=2000000: out of range; use an integer in [1, 1000000]"),
    "seed": (["bootstrap.seed=-1"], "bootstrap.seed=-1: out of range; use an integer in [0, 2147483647]"),
    "coverage": (["relevance.coverage=0"], "relevance.coverage=0.0: out of range; use a number in (0, 1]"),
    "price": (["+cost.bm25.per_1k_requests=-1"], "cost.bm25.per_1k_requests=-1: out of range; use a number in [0, 1000000] (US dollars)"),
    "price-text": (["+cost.bm25.per_1k_requests=abc"], "cost.bm25.per_1k_requests='abc': not a number; use a number in [0, 1000000]"),
    "http-timeout": (["retriever=http", "retriever.url=http://localhost:9/s", "retriever.timeout=0"],
                     "retriever.timeout=0.0: out of range; use a number in [0.001, 86400]"),
    "llm-concurrency": (["rerank=llm", "rerank.base_url=http://localhost:9/v1", "rerank.model=m", "rerank.concurrency=5000"],
                        "rerank.concurrency=5000: out of range; use an integer in [1, 1024]"),
    "lancedb-nprobes": (["retriever=lancedb", "retriever.nprobes=0"], "retriever.nprobes=0: out of range; use an integer in [1, 1000000]"),
}


@pytest.mark.parametrize("case", OUT_OF_RANGE)
@pytest.mark.slow
def test_a_number_out_of_its_range_is_refused_with_the_range(case):
    overrides, message = OUT_OF_RANGE[case]
    with pytest.raises(ConfigError) as refused:
        check(compose_with(*overrides))
    assert any(problem.startswith(message) for problem in refused.value.problems), refused.value.problems


@pytest.mark.slow
def test_an_out_of_range_run_writes_nothing(command, capsys):
    code, folder = command("retriever=fused", "retriever.fusion.k=1e300")
    assert code == 2 and not folder.exists()
    assert capsys.readouterr().err.strip() == (
        "receval: error: retriever.fusion.k=1e+300: out of range; use a number in [0, 1000000] (60 is usual)"
    )


def test_synth_numbers_have_ranges_too():
    cfg = compose_with("synth.base_url=http://localhost:9/v1", "synth.model=m", "synth.temperature=3",
                       "synth.dev_fraction=1.5", config="synth")
    from receval.synth.job import check_config as check_synth

    with pytest.raises(ConfigError) as refused:
        check_synth(cfg)
    assert refused.value.problems == [
        "synth.temperature=3.0: out of range; use a number in [0, 2] (chat APIs take 0 to 2)",
        "synth.dev_fraction=1.5: out of range; use a number in [0, 1]",
    ]


# ------------------------------------------------------------------ every number has a range


def every_schema() -> list[tuple[str, type]]:
    """Every schema a config node is checked against: the run's and synth's (and the
    dataclasses they hold), each registered component kind's, and a stage's prices."""
    found, todo = [], [("run", RecevalConfig), ("synth", SynthRunConfig), ("cost.<stage>", StagePrices)]
    components.discover()
    todo += [(f"{group}/{kind}", components.entry(group, kind, group).schema)
             for group in ("chunking", "retriever", "retriever/fusion", "rerank") for kind in components.kinds(group)]
    while todo:
        name, cls = todo.pop(0)
        found.append((name, cls))
        todo += [(f"{name}.{f.name}", schema.nested_schema(schema.hints(cls)[f.name])) for f in fields(cls)
                 if schema.nested_schema(schema.hints(cls)[f.name])]
    return found


def unranged(cls: type) -> list[str]:
    return [name for name, _, bounds in schema.numeric_fields(cls) if bounds is None]


def test_every_numeric_field_of_every_schema_has_a_range():
    """A number added later without a range fails here."""
    schemas = every_schema()
    assert len(schemas) > 20 and {"retriever/bm25", "rerank/llm", "run.bootstrap", "synth.synth"} <= {n for n, _ in schemas}
    missing = [f"{name}.{field_name}" for name, cls in schemas for field_name in unranged(cls)]
    assert missing == []


def test_the_walk_sees_a_number_without_a_range():
    @dataclass
    class Careless:
        kind: str = "careless"
        count: int = 3
        share: float | None = None
        weights: list[float] = field(default_factory=list)
        flag: bool = True  # no number
        kept: int = field(default=1, metadata=schema.range_(0, 9))

    assert unranged(Careless) == ["count", "share", "weights"]


def test_every_default_lies_in_its_range():
    for name, cls in every_schema():
        for field_ in fields(cls):
            bounds = field_.metadata.get(schema.RANGE)
            default = field_.default_factory() if callable(field_.default_factory) else field_.default
            values = default if isinstance(default, list) else [default]
            for value in values:
                if bounds is not None and isinstance(value, (int, float)):
                    assert bounds.holds(value), (name, field_.name, value, str(bounds))


def test_docs_ranges_is_the_generated_table():
    """docs/pages/reference/ranges.md is ``python -m receval.schema``'s output: regenerate it when a range changes."""
    text = (ROOT / "docs" / "pages" / "reference" / "ranges.md").read_text(encoding="utf-8")
    assert config.ranges_table() in text
