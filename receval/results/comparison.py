"""Two stored runs paired question by question, as data (:func:`compare`);
rendered by :mod:`receval.tables.compare`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from receval.results import configs, labels, selection
from receval.results.differences import Difference, differences_of
from receval.results.derived import with_derived
from receval.results.discovery import load_one, warn
from receval.results.pairing import BootSettings, Pair, bootstrap_settings, paired
from receval.tables.compare import ComparisonTables


@dataclass(frozen=True)
class Comparison(ComparisonTables):
    pair: Pair
    labels: tuple[str, str]  # A's and B's labels (receval.results.labels)
    differences: list[Difference]  # every difference of the saved configs
    boot: BootSettings
    where: list[tuple[str, str]]

    @property
    def params(self) -> dict[str, list]:
        """Dotted key -> [A's value, B's value] for each difference (a component node
        whole, None where a config has no such key)."""
        return {d.key: [configs.jsonable(d.a), configs.jsonable(d.b)] for d in self.differences}

    def to_dict(self) -> dict:
        p = self.pair
        return {
            "a": p.a,
            "b": p.b,
            "label_a": self.labels[0],
            "label_b": self.labels[1],
            "params": self.params,
            "differences": [d.text for d in self.differences],
            "mean_a": p.mean_a,
            "mean_b": p.mean_b,
            **p.to_dict(),
            "where": {c: v for c, v in self.where},
            "bootstrap": self.boot.kwargs(),
        }


def compare(
    a: str | Path,
    b: str | Path,
    metric: str = "rr",
    intersect: bool = False,
    where: list[tuple[str, str]] | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
) -> Comparison:
    """Pair run B against run A by question id (see the module docstring)."""
    run_a = load_one(a, what="A")
    run_b = load_one(b, what="B")
    both = selection.filter_questions([run_a, run_b], list(where or []))
    both = with_derived(both, [metric], option="--metric")  # rr@k
    metric = selection.canonical_measure(metric, both, option="--metric")
    fa = run_a.metadata.get("dataset_fingerprint")
    fb = run_b.metadata.get("dataset_fingerprint")
    if fa and fb and fa != fb:
        warn("A and B were run on different dataset files (fingerprints differ)")
    boot = bootstrap_settings(both, n_resamples, seed, level, method)
    (pair,) = paired(both[0], [both[1]], metric, boot, intersect)
    named = labels.run_labels([run_a, run_b])
    found = differences_of(run_a.config, run_b.config, configs.schema_defaults())
    return Comparison(
        pair=pair, labels=(named[0], named[1]), differences=found, boot=boot, where=list(where or [])
    )
