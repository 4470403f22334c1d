"""ROUGE-L of questions against one very long section: receval's LCS before and after
the bit-parallel change, and rouge-score (the package whose numbers receval matches).

    python benchmarks/rouge_l_long.py [--words 1700000] [--questions 50] [--peer 2]
    python benchmarks/rouge_l_long.py --corpus ../shared/datasets/scifact   # real text

The section is ``--words`` words: the texts of a BEIR ``corpus.jsonl`` (``--corpus``,
its ``queries.jsonl`` as questions) repeated until long enough, or, by default, words
drawn from a Zipf vocabulary of 20,000 (questions: 6-20 of its words, a third of them
from the 50 most common). Each side scores the same questions:

- after: :mod:`receval.measures.overlap` as the pipeline calls it (the section tokenised and
  indexed once, printed apart; then ``precisions`` per question, ROUGE-1/2 included);
- before: the former ``lcs_length``, a numpy dynamic programme over the question's
  tokens, one O(len(section)) row per token (copied below), plus the same ROUGE-1/2;
- rouge-score: ``RougeScorer(["rougeL"]).score(section, question)`` for the first
  ``--peer`` questions only (pure Python, a len(section) x len(question) table).

Every ROUGE-L value is checked equal across the sides. Prints seconds per question,
the ratios, and the time 50,000 such questions would take. Also the built-in
library's questions (ordinary short sections), before and after, to show the
common case did not get slower.

``--small``: a 20,000-word section, 5 questions, rouge-score on 1 (the test extra's
peer). Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from receval.measures import overlap
from receval.datasets import LIBRARY, folder
from receval.datasets.questions import read_questions

import _figures


def before_lcs(a, b) -> int:
    """receval's ``lcs_length`` before this change (O(len(a) * len(b)), numpy rows)."""
    if not len(a) or not len(b):
        return 0
    if len(a) > len(b):
        a, b = b, a
    b = np.asarray(b, dtype=np.int64)
    prev = np.zeros(len(b) + 1, dtype=np.int64)
    for token in a:
        candidate = prev[1:].copy()
        match = b == token
        np.maximum(candidate, np.where(match, prev[:-1] + 1, 0), out=candidate)
        row = np.empty_like(prev)
        row[0] = 0
        np.maximum.accumulate(candidate, out=row[1:])
        prev = row
    return int(prev[-1])


def section_and_questions(args) -> tuple[str, list[str]]:
    if args.corpus:
        root = Path(args.corpus)
        texts = [json.loads(line)["text"] for line in (root / "corpus.jsonl").open(encoding="utf-8")]
        questions = [json.loads(line)["text"] for line in (root / "queries.jsonl").open(encoding="utf-8")]
        words: list[str] = []
        while len(words) < args.words:
            for text in texts:
                words.extend(text.split())
        return " ".join(words[: args.words]), questions[: args.questions]
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, vocab.size + 1)
    weights /= weights.sum()
    section = " ".join(vocab[rng.choice(vocab.size, args.words, p=weights)])
    questions = []
    for _ in range(args.questions):
        n = int(rng.integers(6, 21))
        common = rng.integers(0, 50, n // 3)
        rare = rng.integers(50, vocab.size, n - n // 3)
        questions.append(" ".join(vocab[rng.permutation(np.concatenate([common, rare]))]))
    return section, questions


def timed(call):
    began = time.perf_counter()
    value = call()
    return value, time.perf_counter() - began


def long_section(args) -> dict[str, float]:
    section, questions = section_and_questions(args)
    vocab: dict[str, int] = {}
    passage, prep = timed(lambda: overlap._Passage.of(overlap.tokenize(section), vocab))
    n = passage.index.ids.size
    q_ids = [[vocab.setdefault(t, len(vocab)) for t in overlap.tokenize(q)] for q in questions]
    print(f"section: {n:,} words; {len(questions)} questions of {np.mean([len(q) for q in q_ids]):.1f} words "
          f"on average; tokenised and indexed once in {prep:.2f} s")

    after, t_after = timed(lambda: [passage.precisions(q) for q in q_ids])
    work = [overlap.lcs_work(q, passage.index) for q in q_ids]

    def before_one(q):
        r1, r2, _ = passage.precisions(q)  # ROUGE-1/2 were the same before; only ROUGE-L changed
        return r1, r2, before_lcs(q, passage.index.ids) / len(q) if q else 0.0

    before, t_before = timed(lambda: [before_one(q) for q in q_ids])
    assert [a[2] for a in after] == [b[2] for b in before], "ROUGE-L differs from the former DP"
    per_after, per_before = t_after / len(q_ids), t_before / len(q_ids)
    r = np.array([w[2] for w in work])
    print(f"passage words that are question words (r): median {int(np.median(r)):,}, max {int(r.max()):,} "
          f"({r.max() / n:.1%} of the section)")
    print(f"after  : {per_after * 1e3:8.2f} ms per question (ROUGE-1, -2, -L)")
    print(f"before : {per_before * 1e3:8.2f} ms per question  -> after is {per_before / per_after:.1f}x faster")
    print(f"50,000 such questions: before {50_000 * per_before / 3600:.2f} h, after {50_000 * per_after / 60:.1f} min")
    figures = {"words": n, "after_ms": per_after * 1e3, "before_ms": per_before * 1e3, "ratio": per_before / per_after}

    if args.peer:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
        peer, t_peer = timed(
            lambda: [scorer.score(target=section, prediction=q)["rougeL"].precision for q in questions[: args.peer]]
        )
        assert peer == [a[2] for a in after[: args.peer]], "ROUGE-L differs from rouge-score"
        per_peer = t_peer / args.peer
        print(f"rouge-score: {per_peer:8.2f} s per question (first {args.peer}; tokenises the section each call)"
              f"  -> after is {per_peer / per_after:,.0f}x faster; values equal")
        figures["rouge_score_s"] = per_peer
    return figures


def library() -> float:
    sections = folder.read_pages(LIBRARY / "pages")[0]
    by_id = {s.id: s for s in sections}
    questions = read_questions(LIBRARY / "questions.jsonl", sections)
    repeat = 20
    _, t_after = timed(lambda: [overlap.overlap_columns(questions, by_id) for _ in range(repeat)])
    real = overlap.lcs_work
    overlap.lcs_work = lambda q, index: (before_lcs(q, index.ids), 0, 0)
    try:
        _, t_before = timed(lambda: [overlap.overlap_columns(questions, by_id) for _ in range(repeat)])
    finally:
        overlap.lcs_work = real
    print(f"built-in library ({len(questions)} questions, {len(sections)} short sections, x{repeat}): "
          f"after {t_after * 1e3 / repeat:.1f} ms, before {t_before * 1e3 / repeat:.1f} ms per run "
          f"(ratio after/before {t_after / t_before:.2f})")
    return t_after / t_before


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=1_700_000)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--peer", type=int, default=2, help="questions rouge-score scores (0: skip it)")
    parser.add_argument("--corpus", help="a BEIR folder (corpus.jsonl, queries.jsonl) to take text from")
    args = _figures.parse(parser, argv, small={"words": 20_000, "questions": 5, "peer": 1},
                          keys=("words", "questions", "corpus"))
    figures = long_section(args)
    figures["library_ratio"] = library()
    _figures.record(args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
