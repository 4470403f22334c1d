"""Every config option composes and checks; components are typed by their own schemas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from receval import components
from receval.config import check, config_dir
from receval.core.errors import ConfigError
from receval.schema import Range, range_

CONF = Path(config_dir())
GROUPS = ["dataset", "chunking", "retriever", "retriever/fusion", "rerank", "bootstrap"]


def options(group: str) -> list[str]:
    return sorted(path.stem for path in (CONF / group).glob("*.yaml"))


def compose_with(*overrides: str, config: str = "config", hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config, overrides=list(overrides), return_hydra_config=hydra)


CASES = [(group, option) for group in GROUPS for option in options(group)]


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_option_of_every_group_composes_and_checks(group, option):
    overrides = [f"{group}={option}"]
    if group == "dataset" and option != "library":
        overrides.append("dataset.path=/some/where")
    if group == "retriever/fusion":
        overrides.insert(0, "retriever=fused")
    if group == "rerank" and option in ("cross_encoder", "http", "llm"):  # a model is required
        overrides.append("rerank.model=/models/x")
        overrides += [] if option == "cross_encoder" else ["rerank.base_url=http://localhost:8080"]
    cfg = compose_with(*overrides)
    check(cfg)  # types and ranges of the run and of every component in it
    assert OmegaConf.to_yaml(cfg)


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes_every_job(experiment):
    """An experiment's sweep: each job's overrides compose to a checked config."""
    cfg = compose_with(f"+experiment={experiment}", hydra=True)
    params = cfg.hydra.sweeper.params
    assert params, experiment
    key, values = next(iter(params.items()))
    for value in str(values).split(","):
        job = compose_with(f"+experiment={experiment}", f"{key}={value}")
        check(job)


def test_the_stages_experiment_is_the_walkthrough_table():
    kinds = []
    for stage in options("stage"):
        job = compose_with(f"+stage={stage}")
        rerank = None if job.rerank is None else job.rerank.kind
        kinds.append((stage, job.retriever.kind, rerank))
    assert kinds == [
        ("hybrid", "fused", None), ("hybrid_rerank", "fused", "dense"),
        ("keyword", "bm25", None), ("vector", "dense", None),
    ]


def test_a_run_config_holds_only_what_applies():
    assert dict(compose_with("retriever=tfidf").retriever) == {"kind": "tfidf"}
    fused = compose_with("retriever=fused")
    assert set(fused.retriever) == {"kind", "members", "fusion"}
    assert set(fused.retriever.fusion) == {"kind", "k", "candidates"}  # rrf: no weights
    weighted = compose_with("retriever=fused", "retriever/fusion=weighted")
    assert set(weighted.retriever.fusion) == {"kind", "normalize", "weights", "candidates"}
    assert "fusion" not in compose_with()  # no top-level fusion group any more


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["retriever=tfidf", "retriever.k1=2"], "k1"),
        (["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.normalize=l2"], "normalize"),
        (["retriever=dense", "retriever.backend=grpc"], "backend"),
        (["bootstrap.method=bootstrap"], "method"),
    ],
)
def test_keys_and_enum_values_are_typed_by_the_component_schema(overrides, words):
    with pytest.raises(Exception, match=words):
        compose_with(*overrides)


@pytest.mark.slow
def test_help_lists_only_what_each_command_uses(tmp_path):
    from conftest import run_cli

    run = run_cli("--help", cwd=tmp_path)
    synth = run_cli("--help", cwd=tmp_path, module="receval.synth")
    assert run.returncode == 0 and synth.returncode == 0, run.stderr + synth.stderr
    assert "retriever: bm25, dense, fused, http, http_elasticsearch, hybrid, lancedb, python, tfidf" in run.stdout
    assert "rerank: cross_encoder, dense, http, llm, none" in run.stdout and "experiment: grid, headings, stages" in run.stdout
    groups = synth.stdout.split("== Config groups", 1)[1].split("== Config (", 1)[0]
    assert "dataset:" in groups and "chunking:" in groups
    assert not any(word in synth.stdout for word in ("retriever", "rerank", "bootstrap"))


@dataclass
class EchoConfig:
    kind: str = "echo_test"
    times: int = field(default=1, metadata=range_(1, 100))
    echo: str = "hi"

    def problems(self) -> list[str]:
        return [] if self.echo else ["echo is empty: say something"]


@pytest.fixture
def echo_kind():
    """The echo_test retriever kind, registered for one test (the registry is global)."""
    components.component("retriever", "echo_test", EchoConfig)(lambda node, context: ("echo", node.times))
    yield
    components._REGISTRY.pop(("retriever", "echo_test"))


def test_a_new_component_is_one_registered_builder(echo_kind):
    """Registering a kind makes it buildable from its own node, typed and checked: its
    keys, the range beside its field, then its own ``problems``."""
    context = components.Context()
    assert components.build("retriever", {"kind": "echo_test", "times": 3}, context) == ("echo", 3)
    assert "echo_test" in components.kinds("retriever")
    with pytest.raises(ConfigError, match=r"^retriever.times=0: out of range; use an integer in \[1, 100\]$"):
        components.build("retriever", {"kind": "echo_test", "times": 0, "echo": ""}, context)  # range first
    with pytest.raises(ConfigError, match=r"^retriever.echo is empty"):
        components.build("retriever", {"kind": "echo_test", "echo": ""}, context)
    with pytest.raises(ConfigError, match=r"retriever.colour is not a key of retriever \(echo_test\); valid keys: kind, times, echo"):
        components.build("retriever", {"kind": "echo_test", "colour": "red"}, context)
    with pytest.raises(ConfigError, match=r"retriever.kind='nope' is not a retriever kind; use one of: .*bm25"):
        components.build("retriever", {"kind": "nope"}, context)


def test_equal_nodes_share_one_component():
    from receval.retrievers.text import Tokenizer

    context = components.Context(tokenizer=Tokenizer())
    a = components.build("retriever", {"kind": "bm25"}, context)
    b = components.build("retriever", {"kind": "bm25", "k1": 1.2}, context)
    c = components.build("retriever", {"kind": "bm25", "k1": 0.9}, context)
    assert a is b and a is not c


def test_a_range_holds_no_nan_or_infinity():
    closed, open_low = Range(0, 1), Range(0, 1, low_open=True)
    assert [closed.holds(v) for v in (0, 0.5, 1, -1e-9, float("nan"), float("inf"))] == [
        True, True, True, False, False, False,
    ]
    assert not open_low.holds(0) and open_low.holds(1) and not Range(0, 1, high_open=True).holds(1)
    assert (str(closed), str(open_low), str(Range(1, 1e6))) == ("[0, 1]", "(0, 1]", "[1, 1000000]")


@pytest.mark.slow
def test_report_params_hold_only_what_applies_to_each_run(tmp_path_factory, capsys):
    """The issue's check: a bm25 run carries no fusion, rerank or dense keys; a fused run
    carries its members, fusion method and k."""
    import json

    from conftest import sweep_of

    from receval.cli.report import main

    sweep = sweep_of(tmp_path_factory, "retriever=bm25,fused")
    assert main([str(sweep), "--format", "json"]) == 0
    bm25, fused = (run["params"] for run in json.loads(capsys.readouterr().out)["runs"])
    assert bm25["retriever"] == "bm25" and (bm25["retriever.k1"], bm25["retriever.b"]) == (1.2, 0.75)
    assert not any(k.startswith(("retriever.fusion", "retriever.members", "rerank")) for k in bm25)
    assert not any(word in key for key in bm25 for word in ("model", "backend", "first_size"))
    assert fused["retriever.members"] == ["tfidf", "bm25"]
    assert (fused["retriever.fusion.kind"], fused["retriever.fusion.k"]) == ("rrf", 60.0)
    assert "retriever.k1" not in fused
