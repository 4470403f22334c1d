"""Two stored runs paired question by question, as data (:func:`compare`), on one
measure or several (``--metrics``: one :class:`Pair` each, from the same pairing);
rendered by :mod:`receval.render.compare`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from receval.analysis import filters
from receval.analysis.derived import with_derived
from receval.analysis.differences import Difference, differences_of
from receval.analysis.pairs import Pair, paired
from receval.analysis.settings import BOOTSTRAP_ARGS, bootstrap_settings
from receval.core.settings import BootstrapConfig
from receval.core.errors import named
from receval.core.progress import warn
from receval.results import configs, labels
from receval.results.door import open_run


@dataclass(frozen=True)
class Comparison:
    pair: Pair  # on the first measure
    labels: tuple[str, str]  # A's and B's labels (receval.results.labels)
    differences: list[Difference]  # every difference of the saved configs
    boot: BootstrapConfig
    where: list[tuple[str, str]]
    others: tuple[Pair, ...] = ()  # on each further measure (--metrics)

    @property
    def pairs(self) -> list[Pair]:
        """One pair per measure, in the order asked."""
        return [self.pair, *self.others]

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
            "measures": [{"mean_a": q.mean_a, "mean_b": q.mean_b, **q.to_dict()} for q in self.pairs],
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
    names: Mapping[str, str] | None = None,
    metrics: list[str] | None = None,
) -> Comparison:
    """Pair run B against run A by question id: mean(B - A) over the questions both
    score, its interval, p-value and verdict (receval.stats.paired), questions fixed and
    broken, and every difference of the saved configs; on ``metric``, or on each of
    ``metrics`` (a pair each, in that order). Errors name parameters as ``names`` maps them."""
    run_a = open_run(a, what="A")
    run_b = open_run(b, what="B")
    where = filters.where_pairs(where)
    both = filters.filter_questions([run_a, run_b], where, option=named(names, "where"))
    asked, option = (list(metrics), named(names, "metrics")) if metrics else ([metric], named(names, "metric"))
    both = with_derived(both, asked, option=option)  # rr@k
    measures = list(dict.fromkeys(filters.canonical_measure(m, both, option=option) for m in asked))
    fa = run_a.metadata.get("dataset_fingerprint")
    fb = run_b.metadata.get("dataset_fingerprint")
    if fa and fb and fa != fb:
        warn("A and B were run on different dataset files (fingerprints differ)")
    boot = bootstrap_settings(both, n_resamples, seed, level, method, overridden_by=named(names, "bootstrap", BOOTSTRAP_ARGS))
    pairs = [paired(both[0], [both[1]], m, boot, intersect, option=named(names, "intersect"))[0] for m in measures]
    label_a, label_b = labels.run_labels([run_a, run_b])
    (config_a, texts_a), (config_b, texts_b) = (labels.as_written(r.config, r.facts.get("label"))
                                                for r in (run_a, run_b))
    found = differences_of(config_a, config_b, texts=(texts_a, texts_b))
    return Comparison(pair=pairs[0], labels=(label_a, label_b), differences=found, boot=boot, where=where,
                      others=tuple(pairs[1:]))
