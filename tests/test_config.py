"""Every config option composes and checks; components are typed by their own schemas.

Groups and options are found in conf/ and in the component registry, never listed here:
adding a retriever is one module and one YAML file, and these tests compose it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from receval.run import components
from receval.run.config import check, config_dir
from receval.core.errors import ConfigError
from receval.schema import Range, range_

CONF = Path(config_dir())
# Values a user must give for some options (a dataset's folder, a model): filled in
# wherever the composed option has the key unset, so any new option needing one of them
# composes without editing this test.
REQUIRED = {
    "dataset.path": "/some/where", "dataset.id": "beir/scifact/test", "rerank.model": "/models/x",
    "rerank.base_url": "http://localhost:8080", "retriever.model": "/models/x", "transform.model": "m",
    "transform.base_url": "http://localhost:8080",
}


def options(group: str) -> list[str]:
    return sorted(path.stem for path in (CONF / group).glob("*.yaml"))


def compose_with(*overrides: str, config: str = "config", hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config, overrides=list(overrides), return_hydra_config=hydra)


def run_groups() -> list[str]:
    """The groups a run is composed of, read from conf/config.yaml's defaults list, and
    every group nested in one of them (``retriever/fusion``): found, not listed."""
    defaults = OmegaConf.to_container(OmegaConf.load(CONF / "config.yaml"))["defaults"]
    groups = [next(iter(item)) for item in defaults if isinstance(item, dict)]
    groups = [group for group in groups if not group.startswith("override ")]
    nested = [
        str(folder.relative_to(CONF))
        for group in groups for folder in sorted((CONF / group).rglob("*")) if folder.is_dir()
        if any(folder.glob("*.yaml"))
    ]
    return groups + nested


@functools.cache
def parent_option(group: str) -> tuple[str, ...]:
    """For a nested group (``retriever/fusion``), the parent option that holds it."""
    if "/" not in group:
        return ()
    parent, child = group.rsplit("/", 1)
    for option in options(parent):
        if child in (compose_with(f"{parent}={option}")[parent] or {}):
            return (f"{parent}={option}",)
    raise AssertionError(f"no option of {parent} holds {child}")


def own_values(group: str, option: str) -> dict:
    """The values an option's YAML file sets itself (its defaults list dropped)."""
    own = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{option}.yaml")) or {}
    own.pop("defaults", None)
    return own


GROUPS = run_groups()
CASES = [(group, option) for group in GROUPS for option in options(group)]


def test_the_groups_are_found_in_conf():
    assert set(GROUPS) >= {"dataset", "chunking", "retriever", "retriever/fusion", "rerank", "bootstrap"}
    assert len(CASES) >= 25


def unset(cfg, key: str) -> bool:
    """Whether ``cfg`` has ``key`` with no value yet (``???`` or null)."""
    parent_key, name = key.rsplit(".", 1)
    parent = OmegaConf.select(cfg, parent_key)
    return parent is not None and name in parent.keys() and (
        OmegaConf.is_missing(parent, name) or parent[name] is None
    )


def compose_option(*overrides: str):
    """``overrides`` composed, with whatever :data:`REQUIRED` value it leaves unset filled."""
    cfg = compose_with(*overrides)
    missing = [f"{key}={value}" for key, value in REQUIRED.items() if unset(cfg, key)]
    return compose_with(*overrides, *missing) if missing else cfg


@pytest.mark.parametrize("group", [group for group in GROUPS if components.kinds(group)])
def test_every_registered_kind_has_an_option_in_conf(group):
    """A component registered in code (one module) is selectable by its YAML file (one
    file); the composition test below then composes and checks it."""
    in_conf = {own_values(group, option).get("kind") for option in options(group)}
    assert set(components.kinds(group)) <= in_conf


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
@pytest.mark.slow
def test_every_option_of_every_group_composes_and_checks(group, option):
    overrides = [*parent_option(group), f"{group}={option}"]
    cfg = compose_option(*overrides)
    check(cfg)  # types and ranges of the run and of every component in it
    node = OmegaConf.select(cfg, group.replace("/", "."))
    own = own_values(group, option)
    if not own:  # rerank=none: no second stage
        assert node is None
    for key, value in own.items():
        if f"{group.replace('/', '.')}.{key}" not in REQUIRED:
            assert OmegaConf.to_container(node)[key] == value, (group, option, key)


@pytest.mark.parametrize("experiment", options("experiment"))
@pytest.mark.slow
def test_every_experiment_composes_every_job(experiment):
    """An experiment's sweep: each job's overrides compose to a checked config."""
    cfg = compose_with(f"+experiment={experiment}", hydra=True)
    params = cfg.hydra.sweeper.params
    assert params, experiment
    key, values = next(iter(params.items()))
    for value in str(values).split(","):
        job = compose_with(f"+experiment={experiment}", f"{key}={value}")
        check(job)


@pytest.mark.slow
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


@pytest.mark.slow
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
@pytest.mark.slow
def test_keys_and_enum_values_are_typed_by_the_component_schema(overrides, words):
    with pytest.raises(ConfigCompositionException, match=words):
        compose_with(*overrides)


@pytest.mark.slow
def test_help_lists_only_what_each_command_uses(tmp_path):
    from conftest import run_cli

    run = run_cli("--help", cwd=tmp_path, command="run")
    synth = run_cli("--help", cwd=tmp_path, command="synth")
    assert run.returncode == 0 and synth.returncode == 0, run.stderr + synth.stderr
    assert "retriever: bm25, dense, fused, http, http_elasticsearch, hybrid, lancedb, python, splade, tfidf" in run.stdout
    assert "rerank: cross_encoder, dense, http, llm, none" in run.stdout and "experiment: grid, headings, stages" in run.stdout
    assert "transform: hyde, multi_query, none, rm3" in run.stdout
    groups = synth.stdout.split("== Config groups", 1)[1].split("== Config (", 1)[0]
    assert "dataset:" in groups and "chunking:" in groups
    assert not any(word in synth.stdout for word in ("retriever", "rerank", "bootstrap"))


@dataclass
class EchoConfig(components.RetrieverConfig):
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


def test_each_group_node_is_typed_by_its_base_then_by_its_options_schema(make_config):
    """Hydra's ``retriever: RetrieverConfig = MISSING`` pattern: the run schema types each
    group by its base; the chosen option's schema (a subclass) is what the node holds."""
    from omegaconf import OmegaConf

    from receval.run.config import RecevalConfig
    from receval.rerankers.cross_encoder import CrossEncoderConfig
    from receval.retrievers.dense import DenseConfig

    hints = __import__("typing").get_type_hints(RecevalConfig)
    assert hints["retriever"] is components.RetrieverConfig and hints["chunking"] is components.ChunkingConfig
    cfg = make_config("retriever=dense", "rerank=cross_encoder", "rerank.first_size=12")
    assert OmegaConf.get_type(cfg.retriever) is DenseConfig and OmegaConf.get_type(cfg.rerank) is CrossEncoderConfig
    assert cfg.rerank.first_size == 12  # first_size: a field of the rerank base, so of every re-ranker
    for group, base in components.BASES.items():
        assert all(issubclass(components.entry(group, kind, group).schema, base) for kind in components.kinds(group))


def test_a_schema_not_deriving_from_its_groups_base_is_refused_at_registration():
    @dataclass
    class Loose:
        kind: str = "loose_test"

    with pytest.raises(TypeError, match=r"Loose: a retriever schema derives from receval.run.components.RetrieverConfig"):
        components.component("retriever", "loose_test", Loose)
    assert ("retriever", "loose_test") not in components._REGISTRY


def test_every_composition_reads_the_one_config_store_and_leaves_it_as_it_was():
    """receval.run.hydra_internals.share_config_store: Hydra deep-copies its config repository for each
    composition, and with it the process-wide ConfigStore (every schema receval registers:
    about 30% of a composition's time). The copy must hand back the store itself, and a
    composition must not change what is stored. Fails loudly if Hydra stops holding the
    store in its structured-config source (then the patch can go) or copies it anyway."""
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    copied = CachingConfigRepository(ConfigRepository(create_config_search_path(str(CONF))))
    structured = [source for source in copied.delegate.sources if source.scheme() == "structured"]
    assert structured and all(source.store is store for source in structured)

    schema = OmegaConf.to_yaml(store.load("receval_schema.yaml").node)
    first = compose_with("retriever=bm25", "depth=11")  # two distinct compositions (tests keep
    first.retriever.k1 = 0.1  # each one made); editing the first changes nothing stored
    again = compose_with("retriever=bm25", "depth=12")
    assert again.retriever.k1 != 0.1 and OmegaConf.to_yaml(store.load("receval_schema.yaml").node) == schema
