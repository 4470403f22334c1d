"""Scale: a generated corpus of 1,000,000 passages and 10,000 questions, indexed and evaluated.

Writes a BEIR-layout collection to a temporary folder (passages of 20-80 words drawn
from a Zipf vocabulary of 200,000 words; each question is 6 words drawn from one
passage, which is its relevant document), then runs the real pipeline on it
(``dataset=beir``, BM25, whole passages, depth 10) in a child process and reports
wall time, the run's own step timings, and the child's peak memory (max RSS).
Goal: peak memory within 8 GiB.

``--compare bm25s`` instead puts receval's BM25 beside bm25s on the same generated
corpus, each side in its own child process (one thread): both get the same token
lists (receval's tokenizer, run once, not timed), k1 1.2, b 0.75, Lucene idf, top 10;
receval indexes (``BM25.fit`` plus the tie ranks) and runs ``retrievers.search``,
bm25s runs ``index`` and ``retrieve(n_threads=0)`` with its numpy backend. Prints
index, search, index + search (wall and CPU) and memory (the process's max RSS, and
the high-water RSS of index + search above the RSS they started from, the token
lists already loaded) for both, the ratios (goals: search <= 1.0, index + search <= 0.6, memory <=
1.5) and how many questions get the same top 10 (bm25s breaks ties arbitrarily and
scores in float32, so lists that differ only in the order of equal scores are
counted apart).

It then runs the whole receval run on the same collection in a third process (the
command above: load, chunk, index, search, evaluate, write ``results.parquet``) and
puts its max RSS beside bm25s's whole process (reading the corpus, its token lists,
index, search): goal <= 1.0. The run's top 10 (section ids and scores read back from
its results) is checked against receval's indexing side (identical) and bm25s's.

    python benchmarks/scale.py [--passages 1000000] [--questions 10000] [--compare bm25s]

``--small``: 2,000 passages, 100 questions (with ``--compare bm25s`` and bm25s not
installed: receval's side and the whole run alone). Figures go to
``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import _figures  # noqa: E402

K1, B, TOP = 1.2, 0.75, 10


def generate(root: Path, n_passages: int, n_questions: int, vocab_size: int = 200_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"t{i:x}" for i in range(vocab_size)])
    lengths = rng.integers(20, 81, size=n_passages)
    ranks = rng.zipf(1.2, size=int(lengths.sum()))
    words = vocab[(ranks - 1) % vocab_size]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as corpus:
        for i in range(n_passages):
            text = " ".join(words[starts[i] : ends[i]])
            corpus.write(f'{{"_id": "d{i}", "title": "", "text": "{text}"}}\n')
    chosen = rng.choice(n_passages, size=n_questions, replace=False)
    with open(root / "queries.jsonl", "w") as queries, open(root / "qrels" / "test.tsv", "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for q, doc in enumerate(chosen):
            picks = rng.choice(words[starts[doc] : ends[doc]], size=6)
            queries.write(json.dumps({"_id": f"q{q}", "text": " ".join(picks)}) + "\n")
            qrels.write(f"q{q}\td{doc}\t1\n")


class Pretokenized:
    """Hands receval's retriever token lists that were made once, outside the timing."""

    def many(self, items):
        return items


def max_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def rss_gib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (high-water mark) of this process, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_high_water() -> None:
    """Restart ``VmHWM`` from the current RSS (Linux >= 4.0), so it measures one phase."""
    Path("/proc/self/clear_refs").write_text("5")


def side(name: str, collection: Path, out: Path) -> None:
    """One side of ``--compare``, in its own process: tokenise (not timed), index, search;
    writes timings, memory and the top 10 (chunk indices, scores) to ``out``."""
    from receval.retrievers.text import Tokenizer

    tokenizer, shared = Tokenizer(), {}
    intern = shared.setdefault  # one str object per distinct token, as a real vocabulary keeps

    def tokens(path: Path, field: str) -> tuple[list[str], list[list[str]]]:
        ids, lists = [], []
        with open(path) as lines:
            for line in lines:
                item = json.loads(line)
                ids.append(item["_id"])
                lists.append([intern(t, t) for t in tokenizer(item[field])])
        return ids, lists

    doc_ids, docs = tokens(collection / "corpus.jsonl", "text")
    _, questions = tokens(collection / "queries.jsonl", "text")
    reset_high_water()
    base_gib = rss_gib("VmRSS")
    began, cpu_began = time.perf_counter(), time.process_time()
    if name == "receval":
        from receval.run.ranking import tie_ranks
        from receval.retrievers import search
        from receval.retrievers.bm25 import BM25

        retriever, tie_rank = BM25(Pretokenized(), k1=K1, b=B), tie_ranks(doc_ids)
        retriever.fit(docs, tie_rank)
        indexed, cpu_indexed = time.perf_counter(), time.process_time()
        hits = search(retriever, questions, TOP, tie_rank, batch_size=256)
        idx, scores = hits.chunk_idx, hits.scores
    else:
        import bm25s

        model = bm25s.BM25(k1=K1, b=B, method="lucene", backend="numpy")
        model.index(docs, show_progress=False)
        indexed, cpu_indexed = time.perf_counter(), time.process_time()
        idx, scores = model.retrieve(questions, k=TOP, n_threads=0, show_progress=False)
        idx = np.where(scores > 0, idx, -1)
        scores = np.where(scores > 0, scores * (K1 + 1), np.nan)  # bm25s leaves out the (k1 + 1) factor
    done, cpu_done = time.perf_counter(), time.process_time()
    np.savez(out, idx=idx, scores=scores)
    phase_peak = rss_gib("VmHWM")
    info = {"index": indexed - began, "search": done - indexed, "peak": max_rss_gib(), "base": base_gib,
            "phase peak": phase_peak,
            "index cpu": cpu_indexed - cpu_began, "search cpu": cpu_done - cpu_indexed}
    out.with_suffix(".json").write_text(json.dumps(info))


def agreement(ours: dict, theirs: dict) -> tuple[int, int]:
    """Questions with the identical top 10, and with the same top 10 up to the order of
    equal scores (same score at every rank, within float32 rounding)."""
    same = (ours["idx"] == theirs["idx"]).all(axis=1)
    a, b = np.nan_to_num(ours["scores"], nan=-1.0), np.nan_to_num(theirs["scores"], nan=-1.0)
    close = np.isclose(a, b, rtol=1e-5, atol=0).all(axis=1)
    return int(same.sum()), int((same | close).sum())


def compare(collection: Path, tmp: Path, n_questions: int, args) -> None:
    results = {}
    peer = _figures.installed("bm25s") or not args.small
    if not peer:
        _figures.skip("bm25s", "not installed (pip install 'receval[bench]'): receval's side and the whole run alone")
    for name in ("receval", "bm25s")[: 2 if peer else 1]:
        out = tmp / f"{name}.npz"
        script = [sys.executable, __file__, "--side", name, "--collection", str(collection), "--out", str(out)]
        subprocess.run(script, check=True)
        results[name] = (json.loads(out.with_suffix(".json").read_text()), dict(np.load(out)))
    if not peer:
        return receval_alone(collection, tmp, *results["receval"], args)
    (ours, ours_top), (theirs, theirs_top) = results["receval"], results["bm25s"]
    for info in (ours, theirs):
        info["index + search"] = info["index"] + info["search"]
        info["index + search cpu"] = info["index cpu"] + info["search cpu"]
        info["memory"] = info["phase peak"] - info["base"]
    print(f"{'':<26}{'receval':>10}{'bm25s':>10}{'ratio':>8}{'goal':>8}")
    goals = {"search": "<= 1.0", "index + search": "<= 0.6", "memory": "<= 1.5"}
    goals.update({"search cpu": goals["search"], "index + search cpu": goals["index + search"]})
    keys = ("index", "search", "index + search", "index cpu", "search cpu", "index + search cpu", "peak", "memory")
    for key in keys:  # wall and CPU (user + sys) seconds: on a loaded machine CPU is the steadier
        unit = "G" if key in ("peak", "memory") else "s"
        label = {"peak": "peak memory (max RSS)", "memory": "index + search peak - start"}.get(key, key)
        print(f"{label:<26}{ours[key]:>9.2f}{unit}{theirs[key]:>9.2f}{unit}"
              f"{ours[key] / theirs[key]:>8.2f}{goals.get(key, ''):>8}")
    same, tied = agreement(ours_top, theirs_top)
    print(f"top {TOP}: identical for {same:,}/{n_questions:,} questions; "
          f"identical up to the order of equal scores for {tied:,}/{n_questions:,}")
    run_peak, run_top = whole_run(collection, tmp)
    same_as_ours = bool((run_top["idx"] == ours_top["idx"]).all() and np.array_equal(
        run_top["scores"], ours_top["scores"], equal_nan=True))
    print(f"{'whole run peak (max RSS)':<26}{run_peak:>9.2f}G{theirs['peak']:>9.2f}G"
          f"{run_peak / theirs['peak']:>8.2f}{'<= 1.0':>8}")
    same, tied = agreement(run_top, theirs_top)
    print(f"whole run: top {TOP} and scores {'identical to' if same_as_ours else 'DIFFERENT from'} the indexing "
          f"side's; against bm25s identical for {same:,}/{n_questions:,}, up to the order of equal scores "
          f"for {tied:,}/{n_questions:,}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _figures.record(args, {
        "receval_index_cpu_s": ours["index cpu"], "receval_search_cpu_s": ours["search cpu"],
        "run_peak_gib": run_peak, "bm25s_peak_gib": theirs["peak"], "run_peak_ratio": run_peak / theirs["peak"],
        "cpu_ratio": ours["index + search cpu"] / theirs["index + search cpu"],
        "memory_gib": ours["memory"], "bm25s_memory_gib": theirs["memory"],
        "memory_ratio": ours["memory"] / theirs["memory"], "identical_top": same, "identical_up_to_ties": tied,
        "questions": n_questions,
    })


def receval_alone(collection: Path, tmp: Path, ours: dict, ours_top: dict, args) -> None:
    """``--small --compare bm25s`` without bm25s: receval's indexing side and the whole run."""
    run_peak, run_top = whole_run(collection, tmp)
    assert (run_top["idx"] == ours_top["idx"]).all(), "the whole run's top 10 differs from the indexing side's"
    print(f"receval: index {ours['index']:.2f} s, search {ours['search']:.2f} s; whole run peak {run_peak:.2f} GiB")
    _figures.record(args, {"receval_index_cpu_s": ours["index cpu"], "receval_search_cpu_s": ours["search cpu"],
                           "run_peak_gib": run_peak})


def pipeline_command(collection: Path, run_dir: Path) -> list[str]:
    """The whole receval run on the generated collection: BM25, whole passages, depth 10."""
    return [sys.executable, "-m", "receval", "dataset=beir", f"dataset.path={collection}",
            "retriever=bm25", "chunking.max_words=null", "cache_dir=null", "search_batch=256",
            f"hydra.run.dir={run_dir}"]


def whole_run(collection: Path, tmp: Path) -> tuple[float, dict]:
    """The run's own max RSS (GiB, from ``wait4``: this child alone) and its top 10 as
    passage indices and scores (NaN padded), read back from ``results.parquet``."""
    import pyarrow.parquet as pq

    child = subprocess.Popen(pipeline_command(collection, tmp / "run"), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"the receval run failed with status {child.returncode}")
    table = pq.read_table(tmp / "run" / "results.parquet", columns=["retrieved", "scores"]).to_pylist()
    idx = np.full((len(table), TOP), -1, dtype=np.int64)
    scores = np.full((len(table), TOP), np.nan)
    for row, item in enumerate(table):  # ids are d<passage>: whole passages, one section each
        idx[row, : len(item["retrieved"])] = [int(doc[1:]) for doc in item["retrieved"]]
        scores[row, : len(item["scores"])] = item["scores"]
    return usage.ru_maxrss / 2**20, {"idx": idx, "scores": scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--compare", choices=["bm25s"], help="receval's BM25 beside bm25s instead of the pipeline")
    parser.add_argument("--side", choices=["receval", "bm25s"], help=argparse.SUPPRESS)
    parser.add_argument("--collection", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = _figures.parse(parser, small={"passages": 2000, "questions": 100}, keys=("passages", "questions", "compare"))
    if args.side:
        side(args.side, args.collection, args.out)
        return
    if args.generate:
        generate(args.generate, args.passages, args.questions)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        began = time.perf_counter()
        # in a child: a forked child starts from its parent's high-water RSS (Linux copies
        # it at fork and keeps it across exec), so generating here would floor every
        # side's max RSS at the generator's (1.9 GiB at 1,000,000 passages)
        subprocess.run([sys.executable, __file__, "--generate", str(tmp / "collection"),
                        "--passages", str(args.passages), "--questions", str(args.questions)], check=True)
        print(f"generated {args.passages:,} passages, {args.questions:,} questions in {time.perf_counter() - began:.1f} s")
        if args.compare:
            compare(tmp / "collection", tmp, args.questions, args)
            return
        began = time.perf_counter()
        subprocess.run(pipeline_command(tmp / "collection", tmp / "run"), check=True)
        wall = time.perf_counter() - began
        peak_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB on Linux
        info = json.loads((tmp / "run" / "run.json").read_text())
    steps = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in info["timings"].items())
    print(f"run: {wall:.1f} s wall ({steps})")
    print(f"peak memory {peak_gib:.2f} GiB (goal <= 8 GiB); {info['n_chunks']:,} chunks")
    print(f"MRR {info['means']['rr']:.3f}, hit@10 {info['means']['hit@10']:.3f}")
    _figures.record(args, {"wall_s": wall, **{f"{k[:-2]}_s": v for k, v in info["timings"].items()},
                           "peak_gib": peak_gib, "mrr": info["means"]["rr"], "hit@10": info["means"]["hit@10"]})


if __name__ == "__main__":
    main()
