"""Every user-facing input, given a bad example: exit status 2, one clear line, no traceback,
nothing left behind.

Command-line cases run ``python -m ...`` as a user would (``conftest.run_cli``) and check
the exit status, the message (the file or key it names and the fix it suggests), that
no traceback is shown, and that no results, run facts, cache entries or temporary
files are left (Hydra's own ``.hydra/`` folder and job log may stay). Errors a loader
raises before anything is written are checked in-process (``RecevalError``), with at
least one command-line case per family of inputs.

The safety-and-truth pass (issue 10), item by item, and where each is tested:

1. stored runs are data (reproduce, --allow-remote/--allow-code, no resolvers):
   test_trust.py, tests 1 (test_reproduce_of_a_tampered_run_sends_no_request, ...)
2. a key pasted where a variable name belongs, refused before Hydra writes:
   test_trust.py::test_a_pasted_key_is_refused_before_anything_is_written
3. redact, then cut: test_remote.py::test_clip_redacts_before_cutting_*, *_redacted
4. outputs never destroy inputs: test_trust.py (export --qrels into a dataset, --out
   inside a run, a directory as output, --force)
5. resume and report know the dataset's content: test_identity.py
6. identity ignores cache_dir, search_batch, bootstrap, objective: test_identity.py
7. NaN/inf/negative/all-zero values refused: CONFIG_CASES below (k1-inf, fusion-k-nan,
   fusion-k-inf, weights-nan, weights-zero, weights-negative, weights-for-rrf)
8. duplicate cutoffs, every sweep value checked before job 0: CONFIG_CASES ks-duplicate,
   test_sweeper.py
9. chunk-set and vocabulary cache checksums: test_cache.py (entries carry a checksum)
10. JSONL split on "\n" only: test_bad_labels.py::test_raw_line_separators_*
11. tracebacks turned into messages: test_limits.py
12. misleading messages (NFC ids, unreadable pages/, float ids, repeated floors,
    repeated ids): test_bad_labels.py
13. overlap tokenises each section once: test_bad_labels.py::test_overlap_reads_*
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, run_cli
from forge import forged

from receval.datasets.folder import read_pages
from receval.datasets.questions import read_questions
from receval.core.errors import RecevalError
from receval.results import open_run
from receval.results.format import META_KEY, RESULTS, RUN_JSON, SCHEMA_VERSION

SITE = FIXTURES / "site"
GOOD_QUESTION = '{"id": "a", "question": "How much is a day pass?", "relevant": ["bikes#prices"]}'


# ----------------------------------------------------------------- helpers


@pytest.fixture
def cli(tmp_path):
    """run_cli in tmp_path/work with a private cache and temp folder, checked afterwards."""
    work, cache, systmp = tmp_path / "work", tmp_path / "cache", tmp_path / "systmp"
    for folder in (work, systmp):
        folder.mkdir()

    def _run(*args: str, command: str | None = None):
        return run_cli(
            *args, cwd=work, command=command,
            env={"RECEVAL_CACHE_DIR": str(cache), "TMPDIR": str(systmp)},
        )

    _run.work, _run.cache, _run.systmp = work, cache, systmp
    return _run


def assert_user_error(done, *words: str) -> None:
    """Exit 2, no traceback, one ``receval: error:`` message holding every word."""
    err = done.stderr
    assert done.returncode == 2, (done.returncode, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert err.count("receval: error:") == 1, err
    for word in words:
        assert word in err, (word, err)


def leftovers(*roots: Path) -> list[Path]:
    """Results, run facts, cache entries and temporary files under ``roots``."""
    found = []
    for root in roots:
        if root.exists():
            found += [
                p for p in root.rglob("*")
                if p.is_file() and (p.name in (RESULTS, RUN_JSON) or p.name.endswith(".tmp") or "cache" in p.parts)
            ]
    return found


def assert_nothing_left(cli, *roots: Path) -> None:
    left = leftovers(cli.work, *roots)
    assert not left, left
    assert not cli.cache.exists() or not any(p.is_file() for p in cli.cache.rglob("*")), list(cli.cache.rglob("*"))
    assert not any(cli.systmp.iterdir()), list(cli.systmp.iterdir())


def make_site(root: Path, pages: dict[str, str | bytes] | None = None, questions: str | bytes | None = None,
              copy: bool = True) -> Path:
    if copy:
        shutil.copytree(SITE, root)
    else:
        root.mkdir(parents=True)
    for name, text in (pages or {}).items():
        path = root / "pages" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    if questions is not None:
        (root / "questions.jsonl").write_bytes(questions if isinstance(questions, bytes) else questions.encode())
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two good stored runs: the built-in library, and the fixture site (other questions)."""
    root = tmp_path_factory.mktemp("runs")
    made = {
        "library": run_cli("hydra.run.dir=library", cwd=root),
        "site": run_cli("dataset=folder", f"dataset.path={SITE}", "hydra.run.dir=site", cwd=root),
    }
    for name, done in made.items():
        assert done.returncode == 0, done.stderr
    return {name: root / name for name in made}


def damaged(runs, tmp_path, how: str) -> Path:
    """A copy of the library run, damaged one way, its manifest forged to match (else the
    door calls it incomplete before these checks: tests/test_door.py)."""
    run_dir = tmp_path / f"run-{how}"
    shutil.copytree(runs["library"], run_dir)
    results = run_dir / RESULTS
    data = results.read_bytes()
    if how == "truncated":
        results.write_bytes(data[: len(data) // 2])
    elif how == "corrupt":  # 512 zero bytes over the question ids' pages: a column every reader decodes
        column = next(c for c in (pq.ParquetFile(results).metadata.row_group(0).column(i)
                                  for i in range(pq.ParquetFile(results).metadata.num_columns))
                      if c.path_in_schema == "question_id")
        start = column.dictionary_page_offset or column.data_page_offset
        results.write_bytes(data[:start] + b"\0" * 512 + data[start + 512:])
    elif how == "empty":
        results.write_bytes(b"")
    elif how in ("newer", "no-column"):
        table = pq.read_table(results)
        if how == "newer":
            meta = json.loads(table.schema.metadata[META_KEY])
            meta["schema_version"] = SCHEMA_VERSION + 1
            table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        else:
            table = table.drop_columns(["question_id"])
        pq.write_table(table, results)
    elif how == "garbage-json":
        (run_dir / RUN_JSON).write_text("{\"config_hash\": oops")
    elif how == "list-json":
        (run_dir / RUN_JSON).write_text("[1, 2, 3]\n")
    elif how == "bad-config":
        (run_dir / ".hydra" / "config.yaml").write_text("dataset: [unclosed\n")
    else:
        raise AssertionError(how)
    return forged(run_dir)


# ----------------------------------------------------------------- config values (command line)

CONFIG_CASES = {
    "unknown-key": (["chunking.max_word=40"], ["chunking.max_word is not a key", "did you mean chunking.max_words"]),
    "wrong-type": (["depth=abc"], ["depth", "could not be converted to Integer"]),
    "k1": (["retriever.k1=-1"], ["retriever.k1=-1.0", "out of range; use a number in [0, 1000]"]),
    "negative-depth": (["depth=-1"], ["depth=-1", "out of range; use an integer in [1, "]),
    "overlap": (["chunking.overlap=120"], ["chunking.overlap=120", "smaller than chunking.max_words=120"]),
    "retriever-group": (["retriever=bm26"], ["retriever=bm26: no such option", "did you mean bm25?", "options: bm25"]),
    "retriever-kind": (["retriever.kind=bm26"], ["retriever.kind='bm26' is not a retriever kind", "bm25", "tfidf"]),
    "k1-for-tfidf": (["retriever=tfidf", "retriever.k1=2"], ["retriever.k1 is not a key of retriever (tfidf)"]),
    "member": (["retriever=fused", "retriever.members=[bm25,bm27]"], ["retriever.members[1].kind='bm27'"]),
    "fusion-weights": (
        ["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[1,2,3]"],
        ["fusion.weights has 3 values for 2 members", "one weight per member"],
    ),
    "weights-for-rrf": (["retriever=fused", "retriever.fusion.weights=[1,2]"], ["retriever.fusion.weights"]),
    "k1-inf": (["retriever.k1=inf"], ["retriever.k1=inf", "out of range; use a number in [0, 1000]"]),
    "fusion-k-nan": (["retriever=fused", "retriever.fusion.k=nan"], ["retriever.fusion.k=nan"]),
    "fusion-k-inf": (["retriever=fused", "retriever.fusion.k=inf"], ["retriever.fusion.k=inf"]),
    "weights-nan": (
        ["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[nan,1]"],
        ["retriever.fusion.weights[0]=nan"],
    ),
    "weights-zero": (
        ["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[0,0]"],
        ["all zero"],
    ),
    "weights-negative": (
        ["retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[-1,1]"],
        ["retriever.fusion.weights[0]=-1.0", "out of range; use a number in [0, 1000000]"],
    ),
    "first-size": (["rerank=dense", "rerank.first_size=0"], ["rerank.first_size=0"]),
    "ks-duplicate": (["metrics.ks=[1,1,3]"], ["metrics.ks=[1, 1, 3]", "names a cutoff twice"]),
    "cutoff": (["metrics.ks=[1,20]"], ["metrics.ks", "raise depth or drop that cutoff"]),
    "format": (["dataset.format=csv"], ["dataset.format", "csv", "folder", "beir"]),
    # issue 22: a key force-added with "+", a misspelt price stage, a number past its range
    "plus-key": (["+chunking.max_word=20"], ["did you mean chunking.max_words?", "kind, max_words, overlap, headings"]),
    "plus-top-key": (["+depht=20"], ["depht is not a key of the config; did you mean depth?"]),
    "cost-stage": (["+cost.rernak.per_1k_requests=2"], ["cost.rernak is not a stage of this run", "bm25, select"]),
    "k1-huge": (["retriever.k1=1e308"], ["retriever.k1=1e+308: out of range; use a number in [0, 1000]"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CONFIG_CASES)
def test_bad_config_value(cli, case):
    overrides, words = CONFIG_CASES[case]
    done = cli(*overrides, "hydra.run.dir=out")
    assert_user_error(done, *words)
    assert_nothing_left(cli)
    assert not (cli.work / "out").exists()  # refused before Hydra made the run folder and .hydra/


@pytest.mark.slow
def test_unwritable_cache_dir(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = cli(f"cache_dir={blocker}/cache", "hydra.run.dir=out")
    assert_user_error(done, str(blocker), "cannot write it", "choose a folder you can write to")
    assert_nothing_left(cli)


# ----------------------------------------------------------------- dataset folders


@pytest.mark.slow
def test_site_without_pages_folder_on_the_command_line(cli, tmp_path):
    site = make_site(tmp_path / "nopages", copy=False, questions=GOOD_QUESTION + "\n")
    done = cli("dataset=folder", f"dataset.path={site}", "hydra.run.dir=out")
    assert_user_error(done, str(site), "no pages/ folder", "put the Markdown pages in")
    assert_nothing_left(cli)


@pytest.mark.slow
def test_non_utf8_page_on_the_command_line(cli, tmp_path):
    site = make_site(tmp_path / "latin1", pages={"cafe.md": b"# Caf\xe9\n\nOpen daily.\n"})
    done = cli("dataset=folder", f"dataset.path={site}", "hydra.run.dir=out")
    assert_user_error(done, "cafe.md", "not UTF-8", "save it as UTF-8")
    assert_nothing_left(cli)


@pytest.mark.parametrize(
    ("pages", "words"),
    [
        ({}, ["no pages found", "pages/*.md"]),  # an empty page set
        ({"notes.txt": "# Not markdown\n\ntext\n"}, ["no pages found"]),
        ({"a.md": "# One\n## Two\n### Three\n"}, ["no text under any heading"]),  # headings only
        ({"a.md": "\n\n   \n"}, ["no text under any heading"]),
        ({"bad.md": b"\xff\xfe# Title\n"}, ["bad.md", "not UTF-8"]),
    ],
    ids=["empty", "no-md", "heading-only", "blank", "non-utf8"],
)
def test_bad_page_set(tmp_path, pages, words):
    pages_dir = tmp_path / "pages"
    pages_dir.mkdir()
    for name, text in pages.items():
        (pages_dir / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(RecevalError) as raised:
        read_pages(pages_dir)
    for word in words:
        assert word in str(raised.value)


def test_folder_named_like_a_page_is_not_read(tmp_path):
    site = make_site(tmp_path / "site")
    (site / "pages" / "drafts.md").mkdir()
    sections, files = read_pages(site / "pages")
    assert [f.name for f in files] == ["bikes.md", "safety.md"] and sections


# ----------------------------------------------------------------- questions files


@pytest.mark.slow
def test_bad_questions_on_the_command_line(cli, tmp_path):
    site = make_site(tmp_path / "site", questions=GOOD_QUESTION + '\n{"id": "b", \n'
                     '{"id": "c", "question": "Helmets?", "relevant": ["safety#helmet"]}\n')
    done = cli("dataset=folder", f"dataset.path={site}", "hydra.run.dir=out")
    assert_user_error(done, "2 problems", "questions.jsonl:2: not valid JSON", "questions.jsonl:3",
                      "'safety#helmet'", "closest: safety#helmets")
    assert_nothing_left(cli)


QUESTION_CASES = {
    "malformed": ('{"id": "x", "question": "Why?" "relevant": []}', [":2: not valid JSON", "fix the line"]),
    "duplicate-id": (GOOD_QUESTION, [":2: duplicate question id 'a'", "first at", ":1", "its own id"]),
    "unknown-label": ('{"id": "x", "question": "Cost?", "relevant": ["bikes#pricez"]}',
                      [":2:", "'bikes#pricez'", "names no section", "closest: bikes#prices"]),
    "empty-question": ('{"id": "x", "question": "   ", "relevant": ["bikes#prices"]}',
                       [":2: empty question", "'question'"]),
    "no-labels": ('{"id": "x", "question": "Why?"}', [":2:", "no relevant sections", '"kind": "unanswerable"']),
    "empty-labels": ('{"id": "x", "question": "Why?", "relevant": []}', [":2:", "no relevant sections"]),
    "bad-grade": ('{"id": "x", "question": "Why?", "relevant": {"bikes#prices": 0}}',
                  [":2:", "grade of 'bikes#prices'", "integer >= 1"]),
    "labels-not-list": ('{"id": "x", "question": "Why?", "relevant": "bikes#prices"}',
                        [":2:", "'relevant' must be a list"]),
    "no-id": ('{"question": "Why?", "relevant": ["bikes#prices"]}', [":2: missing 'id'"]),
    "not-object": ('["a", "b"]', [":2: expected a JSON object, got list"]),
    "huge-number": ('{"id": "x", "question": "Why?", "relevant": {"bikes#prices": 1' + "0" * 5000 + "}}",
                    [":2: cannot be read as JSON", "fix the line"]),
    "deep-nesting": ("[" * 100_000, [":2:", "fix the line"]),
    "bom": ("\ufeff" + GOOD_QUESTION.replace('"a"', '"z"'), [":2: not valid JSON", "BOM"]),
}


@pytest.mark.parametrize("case", QUESTION_CASES)
def test_bad_question_line(tmp_path, case):
    line, words = QUESTION_CASES[case]
    path = tmp_path / "questions.jsonl"
    path.write_text(GOOD_QUESTION + "\n" + line + "\n", encoding="utf-8")
    sections, _ = read_pages(SITE / "pages")
    with pytest.raises(RecevalError) as raised:
        read_questions(path, sections)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", ["holds no questions"]),
        (b"\n \n", ["holds no questions"]),
        (b'{"id": "a", "question": "caf\xe9?"}\n', ["not UTF-8", "save it as UTF-8"]),
        (None, ["questions file not found"]),
    ],
    ids=["empty", "blank", "non-utf8", "missing"],
)
def test_bad_questions_file(tmp_path, content, words):
    path = tmp_path / "questions.jsonl"
    if content is not None:
        path.write_bytes(content)
    sections, _ = read_pages(SITE / "pages")
    with pytest.raises(RecevalError) as raised:
        read_questions(path, sections)
    for word in words:
        assert word in str(raised.value)


# ----------------------------------------------------------------- BEIR folders

def _beir_module():
    """The BEIR reader: an import error fails the test (never a skip)."""
    from receval.datasets import beir as module

    return module


def make_beir(root: Path, drop: tuple[str, ...] = (), files: dict[str, str] | None = None) -> Path:
    content = {
        "corpus.jsonl": '{"_id": "d1", "title": "Cats", "text": "cats purr"}\n{"_id": "d2", "text": "dogs bark"}\n',
        "queries.jsonl": '{"_id": "q1", "text": "which animal purrs"}\n',
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    }
    content.update(files or {})
    for name, text in content.items():
        if name in drop:
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.slow
def test_bad_beir_line_on_the_command_line(cli, tmp_path):
    _beir_module()
    folder = make_beir(tmp_path / "beir", files={"corpus.jsonl": '{"_id": "d1", "text": "x"}\n{"_id": d2}\n'})
    done = cli("dataset=beir", f"dataset.path={folder}", "dataset.split=test", "hydra.run.dir=out")
    assert_user_error(done, "corpus.jsonl:2: not valid JSON", "fix the line")
    assert_nothing_left(cli)


BEIR_CASES = {
    "no-corpus": ({"drop": ("corpus.jsonl",)}, ["corpus.jsonl: not found", "a BEIR folder holds"]),
    "no-queries": ({"drop": ("queries.jsonl",)}, ["queries.jsonl: not found", "a BEIR folder holds"]),
    "no-qrels": ({"drop": ("qrels/test.tsv",)}, ["qrels/test.tsv: not found", "dataset.split='test'"]),
    "bad-json": (
        {"files": {"queries.jsonl": '{"_id": "q1", "text": "x"}\nnot json\n'}},
        ["queries.jsonl:2: not valid JSON"],
    ),
    "bad-qrels": (
        {"files": {"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1 d1 1\n"}},
        ["test.tsv:2: expected 3 tab-separated columns", "integer score"],
    ),
    "qrels-score": (
        {"files": {"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\thigh\n"}},
        ["test.tsv:2:", "integer score"],
    ),
    "unknown-doc": (
        {"files": {"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td9\t1\n"}},
        ["1 unknown document id: 'd9' (line 2)", "every corpus-id must be an _id"],
    ),
    "duplicate-doc": (
        {"files": {"corpus.jsonl": '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n'}},
        ["corpus.jsonl:2: duplicate document id 'd1'"],
    ),
}


@pytest.mark.parametrize("case", BEIR_CASES)
@pytest.mark.slow
def test_bad_beir_folder(tmp_path, make_config, case):
    _beir_module()
    from receval.datasets import load_dataset

    files, words = BEIR_CASES[case]
    folder = make_beir(tmp_path / "beir", **files)
    cfg = make_config("dataset=beir", f"dataset.path={folder}", "dataset.split=test")
    with pytest.raises(RecevalError) as raised:
        load_dataset(cfg.dataset)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


# ----------------------------------------------------------------- report, compare, reproduce arguments


@pytest.mark.slow
def test_report_of_a_missing_dir(cli):
    done = cli(str(cli.work / "runs" / "nope"), command="report")
    assert_user_error(done, "runs/nope: no such directory")


@pytest.mark.slow
def test_compare_with_a_dir_that_is_not_a_run(cli, runs, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("hello")
    done = cli(str(runs["library"]), str(plain), command="compare")
    assert_user_error(done, str(plain), f"no {RESULTS} here", "give a run directory")


@pytest.mark.slow
def test_compare_of_runs_over_different_questions(cli, runs):
    done = cli(str(runs["library"]), str(runs["site"]), command="compare")
    assert_user_error(done, "over different questions", "49 ids only in the first", "--intersect")


@pytest.mark.slow
def test_reproduce_of_a_missing_dir(cli):
    done = cli(str(cli.work / "gone"), command="reproduce")
    assert_user_error(done, "gone: no such directory")
    assert_nothing_left(cli)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--metric", "mrr@70"], ["--metric", "rr@70 is beyond", "depth 10"]),
        (["--metrics", "hit@1,bogus"], ["--metrics", "unknown measure 'bogus'", "hit@k"]),
        (["--fail-under", "hit@3"], ["--fail-under 'hit@3'", "METRIC=FLOOR", "hit@3=0.70"]),
        (["--fail-under", "hit@3=70"], ["--fail-under hit@3=70", "between 0 and 1"]),
        (["--fail-under", "hit@3=abc"], ["'abc' is not a number"]),
        (["--baseline", "retriever=nope"], ["--baseline retriever=nope", "matches none"]),
        (["--format", "xml"], ["--format", "invalid choice: 'xml'"]),
    ],
    ids=["metric-cutoff", "unknown-metric", "floor-syntax", "floor-percent", "floor-text", "baseline", "format"],
)
@pytest.mark.slow
def test_bad_report_argument(cli, runs, args, words):
    out = cli.work / "report.md"
    done = cli(str(runs["library"]), *args, "--out", str(out), command="report")
    assert_user_error(done, *words)
    assert not out.exists()
    assert_nothing_left(cli)


@pytest.mark.slow
def test_report_out_in_an_unwritable_place(cli, runs, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    done = cli(str(runs["library"]), "--format", "json", "--out", f"{blocker}/report.json", command="report")
    assert_user_error(done, f"{blocker}/report.json", "cannot write it", "choose a folder")
    assert_nothing_left(cli, tmp_path)


@pytest.mark.slow
def test_reproduce_out_in_an_unwritable_place(cli, runs, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    done = cli(str(runs["library"]), "--out", f"{blocker}/rerun", command="reproduce")
    assert_user_error(done, "--out", "cannot create it", "choose a folder")
    assert_nothing_left(cli)


# ----------------------------------------------------------------- stored runs


@pytest.mark.parametrize(
    ("how", "command", "words"),
    [
        ("truncated", "report", [RESULTS, "cannot be read as results", "re-run this job"]),
        ("corrupt", "compare", [RESULTS, "cannot be read as results", "re-run this job"]),
        ("newer", "report", [RESULTS, f"results schema {SCHEMA_VERSION + 1}", "upgrade receval"]),
        ("newer", "compare", [f"results schema {SCHEMA_VERSION + 1}", "upgrade receval"]),
        ("newer", "reproduce", [f"results schema {SCHEMA_VERSION + 1}", "upgrade receval"]),
        ("no-column", "reproduce", [RESULTS, "no column question_id", "re-run this job"]),
        ("garbage-json", "report", [RUN_JSON, "not a run's facts", "re-run this job"]),
        ("list-json", "compare", [RUN_JSON, "a JSON list, not an object"]),
        ("bad-config", "reproduce", [".hydra/config.yaml: not readable YAML", "at line", "re-run this job"]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
@pytest.mark.slow
def test_damaged_run_on_the_command_line(cli, runs, tmp_path, how, command, words):
    run_dir = damaged(runs, tmp_path, how)
    before = sorted(p.name for p in run_dir.rglob("*"))
    args = [str(runs["library"]), str(run_dir)] if command == "compare" else [str(run_dir)]
    done = cli(*args, command=command)
    assert_user_error(done, str(run_dir), *words)
    assert sorted(p.name for p in run_dir.rglob("*")) == before  # nothing added beside the run
    assert_nothing_left(cli)


@pytest.mark.slow
def test_damaged_results_with_export(cli, runs, tmp_path):
    import receval.cli.export  # noqa: F401  (an import error fails, never skips)
    run_dir = damaged(runs, tmp_path, "no-column")
    out = cli.work / "run.trec"
    done = cli(str(run_dir), "--trec", str(out), command="export")
    assert_user_error(done, "no column question_id")
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["truncated", "corrupt", "empty", "newer", "no-column"])
def test_damaged_results_are_a_run_error(runs, tmp_path, how):
    run_dir = damaged(runs, tmp_path, how)
    for read in (lambda d: open_run(d, skip=frozenset()), open_run):
        with pytest.raises(RecevalError) as raised:
            read(run_dir)
        assert RESULTS in str(raised.value)


# ----------------------------------------------------------------- readers of other formats

HUGE_NUMBER = '{"_id": "d1", "text": "x", "n": 1' + "0" * 5000 + "}"


@pytest.mark.parametrize("line", [HUGE_NUMBER, "[" * 100_000], ids=["huge-number", "deep-nesting"])
def test_beir_line_that_json_cannot_convert(tmp_path, line):
    beir = _beir_module()
    path = tmp_path / "corpus.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(RecevalError):
        beir.read_corpus(path, True)


def test_external_qrels_not_utf8(tmp_path):
    from receval.results import external
    path = tmp_path / "test.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\nq1\td\xff\t1\n")
    with pytest.raises(RecevalError):
        external.read_labels(path)
