"""report reads its runs one at a time (receval.analysis.streamed): what it holds per run
is a few columns, whatever the number of runs and of measures stored, and the report is
the one the whole tables give."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from receval.analysis import compose
from receval.analysis.report_runs import loaded_runs, streamed_runs
from receval.cli.report import compute, options_of
from receval.cli.report_flags import build_parser
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json

N = 3000  # questions per run
MEASURES = [f"{family}@{k}" for family in ("hit", "recall", "ndcg", "precision", "judged") for k in (1, 3, 5, 10)]


def write_sweep(root, n_runs: int, measures_of=lambda job: MEASURES):
    rng = np.random.default_rng(0)
    ids = [f"q{i:05d}" for i in range(N)]
    for job in range(n_runs):
        folder = root / str(job)
        (folder / ".hydra").mkdir(parents=True)
        rank = rng.integers(0, 11, N)
        rr = np.where(rank > 0, 1.0 / np.maximum(rank, 1), 0.0)
        columns = {
            "question_id": ids, "kind": ["direct"] * N, "split": ["test"] * N, "question": [f"text {i}" for i in ids],
            "relevant": [["s"]] * N, "grades": [[1]] * N, "retrieved": [["s"]] * N, "scores": [[1.0]] * N,
            "first_relevant_rank": [int(r) if r else None for r in rank], "rr": rr.tolist(),
            "latency_ms": rng.gamma(2.0, 0.5, N).tolist(),
        }
        for name in measures_of(job):
            k = int(name.split("@")[1])
            columns[name] = ((rank > 0) & (rank <= k)).astype(float).tolist()
        config = {"retriever": {"kind": "bm25", "k1": 0.5 + job / 10}}
        write_results(folder, columns, ["rr", *measures_of(job)], {"n_chunks": 100})
        write_run_json(folder, {"n_chunks": 100, "n_questions": N, "config": config})
        (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
        seal(folder)
    return root


def prepared(argv, streamed=True):
    asked = options_of(build_parser().parse_args(argv))
    return streamed_runs(asked) if streamed else loaded_runs(asked)


def held(runs) -> int:
    """Bytes the runs' tables hold, each buffer counted once (the ids are shared)."""
    seen, total = set(), 0
    for run in runs:
        for column in run.table.columns:
            for chunk in column.chunks:
                for buffer in chunk.buffers():
                    if buffer is not None and buffer.address not in seen:
                        seen.add(buffer.address)
                        total += buffer.size
    return total


@pytest.mark.slow
def test_held_per_run_is_a_few_columns_whatever_the_runs_and_measures(tmp_path):
    found = {}
    for n_runs in (2, 8):
        sweep = write_sweep(tmp_path / f"s{n_runs}", n_runs)
        found[n_runs] = prepared([str(sweep), "--baseline", "retriever.k1=0.5"])
        whole = prepared([str(sweep), "--baseline", "retriever.k1=0.5"], streamed=False)
        assert held(whole.runs) > 25 * 8 * N * n_runs  # every measure of every run
    # per extra run: rr (the measure the pairs are on), the first relevant rank, judged@10, ids shared
    per_run = (held(found[8].runs) - held(found[2].runs)) / 6
    assert per_run <= (8 + 4 + 8 + 3 / 8) * N + 1024  # three columns and their validity bits
    kept = set(found[8].runs[-1].table.column_names)
    assert kept == {"question_id", "rr", "first_relevant_rank", "judged@10"}


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--chain", "--metrics", "hit@3,rr,ndcg@10", "--fail-under", "hit@1=0.01"],
                                   ["--by", "kind", "--per-question", "--all-pairs"], "gate"])
def test_the_streamed_report_is_the_whole_tables_report(tmp_path, extra, monkeypatch):
    sweep = write_sweep(tmp_path / "s", 3)
    argv = ([str(sweep / "1"), str(sweep / "0"), "--gate", "retriever.k1=0.5"] if extra == "gate"
            else [str(sweep), "--baseline", "retriever.k1=0.5", *extra])
    streamed = compute(build_parser().parse_args(argv)).to_dict()
    monkeypatch.setattr(compose, "streams", lambda options: False)  # every run whole, at once
    assert compute(build_parser().parse_args(argv)).to_dict() == streamed


@pytest.mark.slow
def test_runs_that_store_other_measures_are_read_whole(tmp_path, monkeypatch):
    """A later run without the first one's judged@10 (or a measure shown): the report reads
    every run whole, as it always did, and says what the whole tables say."""
    fewer = [name for name in MEASURES if name != "judged@10"]
    sweep = write_sweep(tmp_path / "s", 3, lambda job: MEASURES if job == 0 else fewer)
    argv = [str(sweep), "--baseline", "retriever.k1=0.5"]
    assert prepared(argv) is None
    streamed = compute(build_parser().parse_args(argv)).to_dict()
    monkeypatch.setattr(compose, "streams", lambda options: False)
    assert compute(build_parser().parse_args(argv)).to_dict() == streamed
