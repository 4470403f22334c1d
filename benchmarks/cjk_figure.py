"""The README's languages figure: MRR of BM25 and TF-IDF on a Chinese collection, CJK
bigrams against whole runs as words.

    python benchmarks/cjk_figure.py [--out docs/pages/img/cjk-mrr.png] [--runs DIR]

Runs the pipeline (``receval.run.pipeline.run``, what ``receval`` calls) on
``tests/fixtures/cjk`` (12 Chinese sections, 12 questions) with ``retriever=bm25,tfidf``
and ``tokenizer.cjk=bigram,off``, default settings otherwise and no cache; each run's
MRR comes from the run's own ``means``, its 95% bootstrap interval from the per-question
``rr`` (``receval.stats.bootstrap``, the report's). Draws one bar per run and prints the numbers it drew. Needs matplotlib (the
``plot`` extra).

``--small``: the same four runs (they take seconds), the figure drawn to a temporary file
(left out when matplotlib is not installed), never over the committed one. The MRRs go to
``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import _figures

ROOT = Path(__file__).resolve().parent.parent
RETRIEVERS = ("bm25", "tfidf")
SPLITS = ("bigram", "off")


def measure(runs: Path) -> dict[tuple[str, str], tuple[float, np.ndarray]]:
    """(retriever, cjk) -> (MRR, per-question rr) from a real run of each setting."""
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir, register
    from receval.run.pipeline import run

    register()
    found = {}
    for retriever in RETRIEVERS:
        for split in SPLITS:
            overrides = [f"dataset.path={ROOT / 'tests' / 'fixtures' / 'cjk'}", f"retriever={retriever}",
                         f"tokenizer.cjk={split}", "cache_dir=null"]
            with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
                cfg = compose("config", overrides=overrides)
            result = run(cfg, runs / f"{retriever}-{split}")
            rr = pq.read_table(result.run_dir / "results.parquet", columns=["rr"]).column("rr").to_numpy()
            found[retriever, split] = (result.means["rr"], rr)
    return found


def interval(rr: np.ndarray) -> tuple[float, float]:
    """The 95% bootstrap interval of the mean rr, as ``report`` computes it (its defaults)."""
    from receval.stats.bootstrap import confidence_interval

    found = confidence_interval(rr)
    return found.lo, found.hi


def draw(found, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"bigram": "#2b6cb0", "off": "#c05621"}
    labels = {"bigram": "tokenizer.cjk=bigram (default)", "off": "tokenizer.cjk=off (a run is one word)"}
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=120)
    width = 0.36
    for j, split in enumerate(SPLITS):
        xs = np.arange(len(RETRIEVERS)) + (j - 0.5) * width
        means = [found[r, split][0] for r in RETRIEVERS]
        bounds = np.array([interval(found[r, split][1]) for r in RETRIEVERS])
        errors = np.abs(bounds.T - np.array(means))
        ax.bar(xs, means, width, color=colors[split], label=labels[split], yerr=errors, capsize=4)
        for x, value in zip(xs, means):
            ax.text(x, value + 0.03, f"{value:.3f}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(np.arange(len(RETRIEVERS)), [r.upper().replace("TFIDF", "TF-IDF") for r in RETRIEVERS])
    ax.set_ylim(0, 1.25)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("MRR (95% bootstrap interval)")
    ax.set_title("12 Chinese questions (tests/fixtures/cjk), default settings", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper right", fontsize=8, frameon=False, ncols=2)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "pages" / "img" / "cjk-mrr.png")
    parser.add_argument("--runs", type=Path, default=None, help="keep the four runs here (default: a temporary folder)")
    args = _figures.parse(parser, small={})
    figures = {}
    with tempfile.TemporaryDirectory() as scratch:
        found = measure(args.runs or Path(scratch))
        for (retriever, split), (mrr, rr) in found.items():
            low, high = interval(rr)
            print(f"{retriever:6} cjk={split:7} MRR {mrr:.3f}  [{low:.3f}, {high:.3f}]  ({rr.size} questions)")
            figures[f"{retriever}_{split}_mrr"] = mrr
        if not args.small:
            draw(found, args.out)
            print(f"-> {args.out}")
        elif _figures.installed("matplotlib"):
            draw(found, Path(scratch) / "cjk-mrr.png")  # drawn, then left with the scratch folder
            print("-> drawn to a temporary file (--small)")
        else:
            _figures.skip("matplotlib's figure", "matplotlib is not installed (the plot extra)")
    _figures.record(args, figures)


if __name__ == "__main__":
    main()
