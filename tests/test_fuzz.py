"""Property-based fuzzing of every loader of user files: nothing but ``RecevalError`` escapes.

Random bytes, random JSON values, question-shaped records and mutated valid lines go to
the questions reader, the page parser and reader, the stored-run reader (random bytes,
truncations and byte flips of a real ``results.parquet``), and the BEIR and TREC readers. A loader either returns or raises a ``RecevalError`` (one message
per problem); ``parse_page`` never raises at all.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="needs hypothesis (the test extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from conftest import FIXTURES  # noqa: E402

from receval.datasets.folder import parse_page, read_pages  # noqa: E402
from receval.datasets.questions import read_questions  # noqa: E402
from receval.core.errors import RecevalError  # noqa: E402
from receval.results import open_run  # noqa: E402
from receval.results.format import RESULTS  # noqa: E402

SITE = FIXTURES / "site"
SECTIONS, _ = read_pages(SITE / "pages")
SECTION_IDS = [s.id for s in SECTIONS]
VALID_LINES = (SITE / "questions.jsonl").read_text(encoding="utf-8").splitlines()

SCALE = float(os.environ.get("RECEVAL_FUZZ_SCALE", "1"))  # e.g. 20 for a longer hunt


def sized(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


FUZZ, FEW = sized(300), sized(100)

# ----------------------------------------------------------------- strategies

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

labels = st.one_of(
    st.lists(st.sampled_from(SECTION_IDS) | st.text(max_size=12) | json_values, max_size=3),
    st.dictionaries(st.sampled_from(SECTION_IDS) | st.text(max_size=12), st.integers(-2, 3) | json_values, max_size=3),
    json_values,
)
question_records = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=6) | st.integers() | json_values,
        "question": st.text(max_size=30) | json_values,
        "kind": st.sampled_from(["direct", "paraphrase", "unanswerable", ""]) | json_values,
        "split": st.sampled_from(["dev", "test", ""]) | json_values,
        "relevant": labels,
    },
)


@st.composite
def mutated(draw, lines: list[str]) -> str:
    """A valid line with a few characters deleted, replaced or inserted."""
    text = draw(st.sampled_from(lines))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "replace", "cut"]))
        piece = draw(st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "\\", "\x00", "\ufeff", "é", "9" * 30])
                     | st.text(max_size=3))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 5)):]
        elif action == "insert":
            text = text[:at] + piece + text[at:]
        elif action == "replace":
            text = text[:at] + piece + text[at + len(piece):]
        else:
            text = text[:at]
    return text


def lines_of(*line_strategies) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(*line_strategies), min_size=0, max_size=6).map("\n".join)


question_files = st.one_of(
    st.binary(max_size=300),
    lines_of(json_values.map(json.dumps)),
    lines_of(question_records.map(json.dumps), st.sampled_from(VALID_LINES)),
    lines_of(mutated(VALID_LINES), st.sampled_from(VALID_LINES)),
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def only_receval_errors(call, *args):
    """Call a loader; a RecevalError is fine, anything else fails the test."""
    try:
        return call(*args)
    except RecevalError as error:
        assert error.problems and all(isinstance(p, str) and p for p in error.problems)
        return None


# ----------------------------------------------------------------- questions and pages


@FUZZ
@given(content=question_files)
@pytest.mark.slow
def test_read_questions_raises_only_receval_errors(scratch, content):
    questions = only_receval_errors(read_questions, write(scratch / "questions.jsonl", content), SECTIONS)
    if questions is not None:  # accepted: every label names a section, ids are unique
        assert len({q.id for q in questions}) == len(questions)
        assert all(set(q.relevant) <= set(SECTION_IDS) for q in questions)


@FUZZ
@given(stem=st.text(min_size=1, max_size=10), markdown=st.text(max_size=400)
       | st.lists(st.sampled_from(["# A", "## A", "### B b", "```", "~~~", "text", "", "  # C #", "#", "#x"]),
                  max_size=12).map("\n".join))
def test_parse_page_never_raises(stem, markdown):
    sections = parse_page(stem, markdown)
    assert len({s.id for s in sections}) == len(sections)  # ids unique within a page
    assert all(s.text.strip() and s.id.startswith(f"{stem}#") for s in sections)


@FEW
@given(pages=st.lists(st.binary(max_size=200) | st.text(max_size=200), min_size=1, max_size=3))
def test_read_pages_raises_only_receval_errors(scratch, pages):
    folder = scratch / "pages"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for i, content in enumerate(pages):
        write(folder / f"p{i}.md", content)
    found = only_receval_errors(read_pages, folder)
    if found is not None:
        assert found[0]  # at least one section, or a RecevalError


# ----------------------------------------------------------------- stored runs


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir
    from receval.run.pipeline import run

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config", overrides=["dataset=folder", f"dataset.path={SITE}"])
    run_dir = tmp_path_factory.mktemp("stored")
    run(cfg, run_dir)
    return run_dir


@FEW
@given(data=st.data())
@pytest.mark.slow
def test_read_run_raises_only_receval_errors(stored, scratch, data):
    good = (stored / RESULTS).read_bytes()
    how = data.draw(st.sampled_from(["random", "truncated", "flipped"]))
    if how == "random":
        content = data.draw(st.binary(max_size=2000))
    elif how == "truncated":
        content = good[: data.draw(st.integers(0, len(good) - 1))]
    else:
        content = bytearray(good)
        for at, byte in data.draw(st.lists(st.tuples(st.integers(0, len(good) - 1), st.integers(0, 255)),
                                           min_size=1, max_size=8)):
            content[at] = byte
        content = bytes(content)
    run_dir = scratch / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(stored, run_dir)
    write(run_dir / RESULTS, content)
    only_receval_errors(lambda d: open_run(d, skip=frozenset()), run_dir)
    only_receval_errors(open_run, run_dir)


# ----------------------------------------------------------------- BEIR and TREC files


def _module(name: str):
    """receval's own module: an import error fails the test (never a skip)."""
    return importlib.import_module(name)


beir_lines = st.one_of(
    st.binary(max_size=300),
    lines_of(json_values.map(json.dumps)),
    lines_of(st.fixed_dictionaries({}, optional={"_id": st.text(max_size=4) | json_values,
                                                 "title": st.text(max_size=10) | json_values,
                                                 "text": st.text(max_size=20) | json_values}).map(json.dumps)),
    lines_of(mutated(['{"_id": "d1", "title": "T", "text": "cats purr"}', '{"_id": "q1", "text": "cats"}'])),
)
token = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6) | st.sampled_from(
    ["q1", "d1", "0", "1", "-1", "Q0", "1e999", "nan", "2.5", "9" * 40, "tag"])
table_lines = st.one_of(
    st.binary(max_size=300),
    lines_of(st.lists(token, max_size=7).map(" ".join), st.lists(token, max_size=4).map("\t".join)),
)


@FUZZ
@given(corpus=beir_lines, queries=beir_lines, qrels=table_lines, title=st.booleans())
@pytest.mark.slow
def test_beir_readers_raise_only_receval_errors(scratch, corpus, queries, qrels, title):
    beir = _module("receval.datasets.beir")
    only_receval_errors(beir.read_corpus, write(scratch / "corpus.jsonl", corpus), title)
    only_receval_errors(beir.read_queries, write(scratch / "queries.jsonl", queries))
    only_receval_errors(beir.read_judgements, write(scratch / "test.tsv", qrels))


@FUZZ
@given(content=table_lines)
@pytest.mark.slow
def test_trec_readers_raise_only_receval_errors(scratch, content):
    trec = _module("receval.results.trec")
    path = write(scratch / "file.trec", content)
    only_receval_errors(trec.read_run, path)
    only_receval_errors(trec.read_qrels, path)
