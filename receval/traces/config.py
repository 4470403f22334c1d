"""The config of ``python -m receval.traces`` (``conf/traces.yaml``): the spans file, the
dataset its questions and units come from, and the run keys a report reads (name,
depth, cutoffs, evidence coverage, bootstrap)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from receval import schema
from receval.run.config import (
    DatasetConfig, IrDatasetsConfig, MetricsConfig, RelevanceConfig, register_resolvers, share_config_store,
)
from receval.core.settings import BootstrapConfig
from receval.schema import INT32, range_


@dataclass
class TracesSource:
    path: str = MISSING  # the JSONL file of exported spans, one span a line


@dataclass
class TracesRunConfig:
    name: Optional[str] = "traces"  # what reports call the run
    traces: TracesSource = field(default_factory=TracesSource)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    relevance: RelevanceConfig = field(default_factory=RelevanceConfig)  # questions labelled with evidence spans
    # sections kept per question: the first of the calls' union, in call order
    depth: int = field(default=10, metadata=range_(1, INT32))


def register_traces() -> None:
    share_config_store()
    register_resolvers()
    ConfigStore.instance().store(name="traces_schema", node=TracesRunConfig)
    ConfigStore.instance().store(group="dataset", name="base_ir_datasets", node=IrDatasetsConfig)


def traces_problems(cfg) -> list[str]:
    """Unknown keys and numbers out of range; cutoffs above ``depth``."""
    problems = schema.problems(TracesRunConfig, cfg)
    deeper = [k for k in cfg.metrics.ks if k > cfg.depth]
    if deeper:
        problems.append(f"metrics.ks has {deeper} above depth={cfg.depth}: raise depth or drop those cutoffs")
    return problems
