"""receval's BM25 against bm25s on SciFact: index and search time, one thread, same tokens.

    python benchmarks/bm25_vs_bm25s.py [--data ../shared/datasets/scifact] [--repeat 5]

Both sides get the same token lists (receval's tokenizer, run once and timed on its
own), the same k1 and b, and the same idf: bm25s ``method="lucene"`` uses
ln(1 + (N - n + 0.5) / (n + 0.5)) like receval; its term part omits the constant
(k1 + 1) factor, which scales every score alike and leaves rankings unchanged.

- receval: ``BM25.fit`` (vocabulary, weight matrix) plus the tie ranks the pipeline
  builds with the index; then ``retrievers.search`` of all train queries, top 10
  (one sparse product per batch of 256, ``select_top`` with the tie rule).
- bm25s: ``BM25.index`` on the token lists; ``retrieve(k=10, n_threads=0)`` with its
  default numpy backend.

Each side is timed ``--repeat`` times; the best time is reported (the machine's
noise only ever adds). Prints both times, the ratio receval / bm25s (goal <= 1.0),
and how many queries get the same top 10 from both. Needs ``pip install bm25s``
(the ``bench`` extra).

``--small``: the built-in library (a few dozen sections), one round; bm25s left out
when it is not installed. Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from omegaconf import OmegaConf  # noqa: E402

from receval.datasets import load_dataset  # noqa: E402
from receval.run.ranking import tie_ranks  # noqa: E402
from receval.retrievers import search  # noqa: E402
from receval.retrievers.bm25 import BM25  # noqa: E402
from receval.retrievers.text import Tokenizer  # noqa: E402

import _figures  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
K1, B, TOP = 1.2, 0.75, 10


class Pretokenized:
    """Hands receval's retriever token lists that were made once, outside the timing."""

    def many(self, items):
        return items


def timed(repeat: int, index, search):
    """Best index time, best search time and best index + search time over ``repeat``
    rounds (each round indexes, then searches that index); the last results."""
    index_s, search_s, total_s, result = [], [], [], None
    for _ in range(repeat):
        began = time.perf_counter()
        model = index()
        indexed = time.perf_counter()
        result = search(model)
        done = time.perf_counter()
        index_s.append(indexed - began)
        search_s.append(done - indexed)
        total_s.append(done - began)
    return min(index_s), min(search_s), min(total_s), result


def receval_side(doc_tokens, query_tokens, doc_ids):
    def index():
        retriever, tie_rank = BM25(Pretokenized(), k1=K1, b=B), tie_ranks(doc_ids)
        retriever.fit(doc_tokens, tie_rank)
        return retriever, tie_rank

    def run(model):
        retriever, tie_rank = model
        return search(retriever, query_tokens, TOP, tie_rank, batch_size=256)

    return index, run


def bm25s_side(doc_tokens, query_tokens):
    import bm25s

    def index():
        model = bm25s.BM25(k1=K1, b=B, method="lucene", backend="numpy")
        model.index(doc_tokens, show_progress=False)
        return model

    def run(model):
        return model.retrieve(query_tokens, k=TOP, n_threads=0, show_progress=False)

    return index, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "datasets" / "scifact"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--repeat", type=int, default=5)
    args = _figures.parse(parser, small={"data": None, "split": None, "repeat": 1}, keys=("split",))
    if args.data is not None and Path(args.data).name != "scifact":  # another collection: an entry of its own
        args.entry += f" --data {Path(args.data).name}"
    if args.data is not None and not Path(args.data).is_dir():
        print(f"skipped: {args.data} is absent (the shared scifact collection); pass --data")
        return
    no_peer = args.small and not _figures.installed("bm25s")
    if no_peer:
        _figures.skip("bm25s", "not installed (pip install 'receval[bench]')")

    if args.data is None:  # --small: the built-in library
        cfg = OmegaConf.create({"name": "library", "format": "folder", "path": None, "questions": None})
    else:
        cfg = OmegaConf.create(
            {"name": "scifact", "format": "beir", "path": args.data, "questions": None, "split": args.split,
             "title": True}
        )
    dataset = load_dataset(cfg)
    doc_ids = [s.id for s in dataset.sections]
    tokenizer = Tokenizer()
    began = time.perf_counter()
    doc_tokens = tokenizer.many(s.text for s in dataset.sections)
    query_tokens = tokenizer.many(q.text for q in dataset.questions)
    tokenize_s = time.perf_counter() - began
    query_tokens = [q if q else ["\x00"] for q in query_tokens]  # bm25s needs >= 1 token per query
    print(
        f"{args.data or 'built-in library'}: {len(doc_ids)} docs, {len(query_tokens)} {args.split or 'library'} queries, "
        f"top {TOP}, k1={K1} b={B}; tokenised once in {tokenize_s:.3f} s (not counted)"
    )

    r_index, r_search = receval_side(doc_tokens, query_tokens, doc_ids)
    timed(1, r_index, r_search)  # warm up (imports, caches)
    r_index_s, r_search_s, r_total_s, hits = timed(args.repeat, r_index, r_search)
    figures = {"receval_index_s": r_index_s, "receval_search_s": r_search_s, "receval_total_s": r_total_s}
    if no_peer:
        print(f"receval: index {r_index_s:.3f} s, search {r_search_s:.3f} s")
        _figures.record(args, figures)
        return

    _figures.record(args, {**figures, **against_bm25s(args, doc_tokens, query_tokens, hits,
                                                  (r_index_s, r_search_s, r_total_s))})


def against_bm25s(args, doc_tokens, query_tokens, hits, ours_s: tuple[float, float, float]) -> dict[str, float]:
    """bm25s on the same token lists, timed alike; both sides printed, its figures returned."""
    r_index_s, r_search_s, r_total_s = ours_s
    import bm25s

    print(f"bm25s {bm25s.__version__}")
    s_index, s_search = bm25s_side(doc_tokens, query_tokens)
    timed(1, s_index, s_search)  # warm up
    s_index_s, s_search_s, s_total_s, (s_docs, s_scores) = timed(args.repeat, s_index, s_search)

    same_list = same_set = 0
    for row in range(len(query_tokens)):
        ours = [int(i) for i in hits.chunk_idx[row] if i >= 0]
        theirs = [int(i) for i, s in zip(s_docs[row], s_scores[row]) if s > 0]
        same_list += ours == theirs
        same_set += set(ours) == set(theirs)
    n = len(query_tokens)

    rows = [
        ("index", r_index_s, s_index_s),
        ("search", r_search_s, s_search_s),
        ("index + search", r_total_s, s_total_s),
    ]
    print(f"{'':<16}{'receval':>10}{'bm25s':>10}{'ratio':>8}")
    for name, ours, theirs in rows:
        print(f"{name:<16}{ours:>9.3f}s{theirs:>9.3f}s{ours / theirs:>8.2f}")
    print(
        f"top {TOP} agreement: identical lists {same_list}/{n} ({same_list / n:.1%}), "
        f"same documents {same_set}/{n} ({same_set / n:.1%})"
    )
    print(f"ratio receval / bm25s (index + search): {r_total_s / s_total_s:.2f}  (goal <= 1.0)")
    assert same_set >= 0.95 * n, "receval and bm25s should retrieve the same top 10 for most queries"
    return {"bm25s_index_s": s_index_s, "bm25s_search_s": s_search_s, "bm25s_total_s": s_total_s,
            "ratio": r_total_s / s_total_s, "identical_top": same_list, "questions": n}


if __name__ == "__main__":
    main()
