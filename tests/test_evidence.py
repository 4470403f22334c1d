"""Evidence labels (quotes, spans), the coverage rule and the token measures,
on ``fixtures/essays``: three pages of plain paragraphs, no headings."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from receval.chunking.words import chunk_sections
from receval.measures.coverage import covered_by_rank, found_rank, union_by_rank
from receval.datasets import folder
from receval.core.errors import DatasetError
from receval.cli.report import main as report_main
from receval.cli.report import report_for
from receval.render.report import main_table
from conftest import FIXTURES, exit_code, run_of

ESSAYS = FIXTURES / "essays"


def _load(root=ESSAYS, questions=None):
    return folder.load(OmegaConf.create({"name": "essays", "path": str(root), "questions": questions}))


def _questions_file(tmp_path, *records) -> str:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------ the coverage rule


def test_covered_by_rank_counts_the_union_of_chunks_once():
    # item [0, 10); chunks at ranks 1..3: [5, 15), [0, 3), [2, 6) (overlaps the other two)
    covered = covered_by_rank(np.array([0]), np.array([10]), np.array([[5, 0, 2]]), np.array([[15, 3, 6]]))
    assert covered.tolist() == [[5, 8, 10]]
    assert found_rank(covered, np.array([10]), 0.5).tolist() == [1]
    assert found_rank(covered, np.array([10]), 0.9).tolist() == [3]
    # a chunk elsewhere (or none: an empty interval) covers nothing
    assert covered_by_rank(np.array([0]), np.array([10]), np.array([[20, 0]]), np.array([[30, 0]])).tolist() == [[0, 0]]
    assert found_rank(np.array([[0, 4]]), np.array([10]), 0.5).tolist() == [0]


def test_covered_by_rank_agrees_with_counting_characters():
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 50, 200)
    ends = starts + rng.integers(1, 30, 200)
    chunk_starts = rng.integers(0, 80, (200, 6))
    chunk_ends = chunk_starts + rng.integers(0, 25, (200, 6))
    covered = covered_by_rank(starts, ends, chunk_starts, chunk_ends)
    for i in range(200):
        item, held = set(range(starts[i], ends[i])), set()
        for r in range(6):
            held |= set(range(chunk_starts[i, r], chunk_ends[i, r]))
            assert covered[i, r] == len(item & held)
    union = union_by_rank(chunk_starts, chunk_ends)
    for i in range(200):
        assert union[i].tolist() == [len(set().union(*(range(a, b) for a, b in zip(chunk_starts[i, : r + 1], chunk_ends[i, : r + 1])))) for r in range(6)]


def test_union_by_rank_counts_overlapping_chunks_once():
    assert union_by_rank(np.array([[0, 5, 20]]), np.array([[10, 15, 25]])).tolist() == [[10, 15, 20]]


# ------------------------------------------------------------------ labels


def test_offsets_point_into_the_page_text():
    dataset = _load()
    for section in dataset.sections:
        assert dataset.pages[section.page][section.start : section.end] == section.text
    for overlap in (0, 5):
        by_id = {s.id: s for s in dataset.sections}
        for chunk in chunk_sections(dataset.sections, 20, overlap, headings=True):
            page = dataset.pages[by_id[chunk.section_id].page]
            assert page[chunk.start : chunk.end].split() == chunk.text.split("\n", 1)[1].split()


def test_quotes_are_located_whitespace_insensitively_even_across_paragraphs():
    questions = {q.id: q for q in _load().questions}
    (fresnel,) = questions["fresnel"].evidence
    text = _load().pages["lighthouses"][fresnel.start : fresnel.end]
    assert "ahead.\n\nThe great advance" in text  # the quote has one space there
    assert text.startswith("so a navigator") and text.endswith("glass prisms.")
    assert len(questions["sour-taste"].evidence) == 2
    assert questions["colony"].relevant == {"bees#bees": 1} and not questions["colony"].evidence


def test_a_quote_not_in_the_pages_names_the_closest_passage(tmp_path):
    path = _questions_file(tmp_path, {"id": "x", "question": "?", "evidence": ["Keepers trimmed the candles every night"]})
    with pytest.raises(DatasetError) as raised:
        _load(questions=path)
    (problem,) = raised.value.problems
    assert problem.startswith(f"{path}:1: question 'x' quotes 'Keepers trimmed the candles every night'")
    assert "closest: lighthouses:612: 'Keepers trimmed the wicks every few" in problem


def test_a_quote_in_two_places_needs_its_page(tmp_path):
    ambiguous = {"id": "x", "question": "?", "evidence": ["of the"]}  # on every page
    with pytest.raises(DatasetError, match="found in more than one place .*give the \"page\" it is on"):
        _load(questions=_questions_file(tmp_path, ambiguous))
    twice_on_page = {**ambiguous, "evidence": [{"quote": "the crust", "page": "sourdough"}]}
    with pytest.raises(DatasetError, match="found in more than one place .*give the quote more text"):
        _load(questions=_questions_file(tmp_path, twice_on_page))
    once = {**ambiguous, "evidence": [{"quote": "whose long low groan", "page": "lighthouses"}]}
    (question,) = _load(questions=_questions_file(tmp_path, once)).questions
    assert question.evidence[0].page == "lighthouses"


def test_bad_spans_are_refused_with_the_fix(tmp_path):
    past = {"id": "x", "question": "?", "spans": [{"page": "bees", "start": 0, "end": 99999}]}
    with pytest.raises(DatasetError, match="ends past the page's 1252 characters"):
        _load(questions=_questions_file(tmp_path, past))
    unknown = {"id": "x", "question": "?", "spans": [{"page": "wasps", "start": 0, "end": 5}]}
    with pytest.raises(DatasetError, match="names page 'wasps'"):
        _load(questions=_questions_file(tmp_path, unknown))
    backwards = {"id": "x", "question": "?", "spans": [{"page": "bees", "start": 5, "end": 5}]}
    with pytest.raises(DatasetError, match="0 <= start < end"):
        _load(questions=_questions_file(tmp_path, backwards))


def test_a_whitespace_only_span_is_refused(tmp_path):
    page = _load().pages["bees"]
    gap = page.index("\n\n")  # a paragraph break: characters, but no word
    blank = {"id": "x", "question": "?", "spans": [{"page": "bees", "start": gap, "end": gap + 2}]}
    with pytest.raises(DatasetError) as raised:
        _load(questions=_questions_file(tmp_path, blank))
    (problem,) = raised.value.problems
    assert problem.endswith(
        f"question 'x' span bees:{gap}-{gap + 2} holds only whitespace ('\\n\\n'); give the offsets of the passage's words"
    )


def _page_folder(root, text: str):
    (root / "pages").mkdir(parents=True)
    (root / "pages" / "menu.md").write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("page_form, quote_form", [("NFD", "NFC"), ("NFC", "NFD")])
def test_a_quote_that_differs_only_by_unicode_normalisation_is_found(tmp_path, page_form, quote_form):
    """macOS and PDF exports write "e" + combining accent; a label is typed with "é":
    the quote is found, and its span is in the page's own characters."""
    import unicodedata

    text = "Opening hours.\n\nThe café serves crème brûlée daily.\n\nClosed on Mondays.\n"
    root = _page_folder(tmp_path / "site", unicodedata.normalize(page_form, text))
    page = (root / "pages" / "menu.md").read_text(encoding="utf-8")
    for quote, expected in [
        ("café serves crème brûlée", "café serves crème brûlée"),
        ("brûlée daily", "brûlée daily"),
        ("rème", "rème"),  # starts after the c, inside a changed word
        ("caf", None),  # ends before the accent: not the whole "é", so "café" is not what matches
    ]:
        record = {"id": "q", "question": "?", "evidence": [unicodedata.normalize(quote_form, quote)]}
        path = _questions_file(tmp_path, record)
        if expected is None:
            (question,) = _load(root, path).questions
            (item,) = question.evidence
            assert unicodedata.normalize("NFC", page[item.start : item.end]) == "caf"
            continue
        (question,) = _load(root, path).questions
        (item,) = question.evidence
        assert page[item.start : item.end] == unicodedata.normalize(page_form, expected)


def test_a_quote_not_found_says_how_it_was_compared(tmp_path):
    path = _questions_file(tmp_path, {"id": "x", "question": "?", "evidence": ["the candles every night"]})
    with pytest.raises(DatasetError, match=r"not in the pages \(compared with whitespace ignored and both in Unicode NFC\)"):
        _load(questions=path)


# ------------------------------------------------------------------ pinned measures


@pytest.fixture(scope="module")
def essay_runs(tmp_path_factory):
    return {
        words: run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", f"chunking.max_words={words}")
        for words in (20, 40, 120)
    }


def _row(run_dir, qid):
    return next(r for r in pq.read_table(run_dir / "results.parquet").to_pylist() if r["question_id"] == qid)


# Hand computation. Words are counted from 0 on each page; a window of W words is
# chunk @i = words [W*i, W*i + W).
# honey-left: bees words 204-215 (12 words). 20 words: bees@10 = 200-219 holds all of
#   it, bees@9 = 180-199 none; ranked bees@9, bees@10 -> rr 1/2, token_recall@1 0,
#   @3 12/12. 40 words: bees@5 = 200-225 holds all; ranked bees@4, bees@5 -> the same.
#   120 words: bees@1 = 120-225 ranked first -> rr 1, token_recall@1 1.
# fresnel (quote across a paragraph break): lighthouses words 37-65 (29 words).
#   20 words: @1 holds 37-39 (3), @2 40-59 (20), @3 60-65 (6); ranked @3 first, @1
#   eighth, @2 tenth: 9 of 29 words (under half) until rank 10 -> rr 1/10,
#   token_recall@1 = @3 = 6/29. 40 words: @0 holds 37-39, @1 40-65 (26 words, over
#   half) ranked first, @0 third -> rr 1, token_recall@1 26/29, @3 29/29. 120 words:
#   @0 holds all, ranked first -> rr 1, token_recall@1 1.
PINNED = {
    ("honey-left", 20): (Fraction(1, 2), 0, 1, ["bees#bees@9", "bees#bees@10"]),
    ("honey-left", 40): (Fraction(1, 2), 0, 1, ["bees#bees@4", "bees#bees@5"]),
    ("honey-left", 120): (1, 1, 1, ["bees#bees@1"]),
    ("fresnel", 20): (Fraction(1, 10), Fraction(6, 29), Fraction(6, 29), ["lighthouses#lighthouses@3"]),
    ("fresnel", 40): (1, Fraction(26, 29), 1, ["lighthouses#lighthouses@1"]),
    ("fresnel", 120): (1, 1, 1, ["lighthouses#lighthouses@0"]),
}


@pytest.mark.parametrize("qid, words", sorted(PINNED))
@pytest.mark.slow
def test_hand_computed_rr_and_token_recall(essay_runs, qid, words):
    rr, recall_1, recall_3, ranked = PINNED[qid, words]
    row = _row(essay_runs[words], qid)
    assert row["retrieved"][: len(ranked)] == ranked  # the ranking the computation assumes
    assert row["rr"] == pytest.approx(float(rr))
    assert row["token_recall@1"] == pytest.approx(float(recall_1))
    assert row["token_recall@3"] == pytest.approx(float(recall_3))


@pytest.mark.slow
def test_fresnel_at_20_words_is_found_only_when_both_halves_are_in(essay_runs):
    row = _row(essay_runs[20], "fresnel")
    assert row["retrieved"][7] == "lighthouses#lighthouses@1" and row["retrieved"][9] == "lighthouses#lighthouses@2"
    assert row["first_relevant_rank"] == 10 and row["hit@5"] == 0 and row["recall@10"] == 1
    assert row["ndcg@10"] == pytest.approx(1 / np.log2(11))


@pytest.mark.slow
def test_token_precision_and_context_at_120_words(essay_runs):
    row = _row(essay_runs[120], "honey-left")
    # bees@1 (words 120-225: 106), then two more 120-word tails: 109 and 106 page words
    assert row["context_tokens@3"] == 321
    assert row["token_precision@3"] == pytest.approx(12 / 321)
    assert row["token_iou@1"] == pytest.approx(12 / 106)
    unanswerable = _row(essay_runs[120], "lens-price")
    assert unanswerable["token_recall@3"] is None and unanswerable["rr"] is None


def test_section_labels_score_as_before_beside_evidence(essay_runs, tmp_path, tmp_path_factory):
    row = _row(essay_runs[20], "colony")
    assert row["retrieved"][0] == "bees#bees" and row["rr"] == 1.0  # sections, collapsed
    alone = _questions_file(tmp_path, {"id": "colony", "question": "What is a honeybee colony?", "relevant": ["bees#bees"]})
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", f"dataset.questions={alone}", "chunking.max_words=20")
    (single,) = pq.read_table(run_dir / "results.parquet").to_pylist()
    same = [c for c in single if not c.startswith("latency_ms") and c != "question"]
    assert {c: single[c] for c in same} == {c: row[c] for c in same}


@pytest.mark.parametrize("block", [1, 200])
def test_pages_read_a_block_at_a_time_give_the_same_measures(essay_runs, tmp_path_factory, monkeypatch, block):
    """Token measures locate chunk and span ends among the pages' words a block of
    pages at a time (memory follows the block); one page per block, or a few, must
    give every measure the single block gives."""
    from receval.measures.spans import PageLine

    monkeypatch.setattr(PageLine, "BLOCK", block)
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", "chunking.max_words=20")
    rows, whole = (pq.read_table(d / "results.parquet").to_pylist() for d in (run_dir, essay_runs[20]))
    kept = [c for c in rows[0] if not c.startswith("latency_ms")]
    assert any(r["token_recall@3"] for r in rows)  # the measures are there to compare
    assert [{c: r[c] for c in kept} for r in rows] == [{c: r[c] for c in kept} for r in whole]


@pytest.mark.slow
def test_report_shows_token_measures(essay_runs, capsys):
    report = report_for([str(essay_runs[20]), str(essay_runs[120]), "--metrics", "hit@3,token_precision@3"])
    assert "token_precision@3" in report.metrics
    assert exit_code(report_main, [essay_runs[20], "--metrics", "token_iou@5,context_tokens@3"]) == 0
    assert "context_tokens@3" in capsys.readouterr().out
    capsys.readouterr()
    assert exit_code(report_main, [essay_runs[20], "--metrics", "token_recall@7"]) == 0  # derived from each rank's counts
    assert "token_recall@7" in capsys.readouterr().out


def test_synth_records_the_quote_as_evidence_and_runs_score_it(tmp_path, tmp_path_factory):
    from receval.synth import make_record, make_units
    from receval.synth.quotes import locate_quotes, sources

    dataset = _load()
    units = make_units(dataset.sections, "chunk", OmegaConf.create({"kind": "words", "max_words": 40, "overlap": 0}))
    syn = OmegaConf.create({"model": "m", "temperature": 0.0, "seed": 0, "dev_fraction": 0.5, "unit": "chunk"})
    fog = next(u for u in units if u.id == "lighthouses#lighthouses@4")  # words 160-199: cottages, fog
    quote = "Some old keepers'\n cottages have become holiday homes"  # whitespace as a model may give it
    reply = {"question": "What became of the old keepers cottages?", "answer": "holiday homes", "quotes": [quote]}
    spans, problem = locate_quotes(reply["quotes"], sources([fog], {s.id: s for s in dataset.sections}))
    page = dataset.pages["lighthouses"]
    at = page.index("Some old keepers' cottages")
    assert problem is None and spans == [{"page": "lighthouses", "start": at, "end": at + len(" ".join(quote.split()))}]
    assert fog.start <= at < spans[0]["end"] <= fog.end
    record = make_record("syn-1", "direct", [fog], 0, reply, syn, "essays", spans)
    assert record["spans"] == spans and record["quotes"] == [" ".join(quote.split())]
    assert record["provenance"]["source"]["spans"] == [{"page": "lighthouses", "start": fog.start, "end": fog.end}]
    assert locate_quotes(["keepers' cottages became hotels"], sources([fog], {}))[1].startswith(
        "quote \"keepers' cottages became hotels\" is not in the passage"
    )
    path = _questions_file(tmp_path, record)
    # read with sections alone (synth's own check) and as a run reads it: same span
    from receval.datasets.questions import read_questions

    (alone,) = read_questions(tmp_path / "q.jsonl", dataset.sections)
    (question,) = _load(questions=path).questions
    assert alone.evidence == question.evidence and question.evidence[0].start == at
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", f"dataset.questions={path}", "chunking.max_words=40")
    (row,) = pq.read_table(run_dir / "results.parquet").to_pylist()
    assert row["retrieved"][0] == "lighthouses#lighthouses@4" and row["rr"] == 1.0
    assert row["token_recall@1"] == 1.0  # the quote's 8 words, inside the 40-word chunk
    assert row["token_precision@1"] == pytest.approx(8 / 40)


def test_report_bolds_the_fewest_context_tokens(essay_runs):
    report = report_for([str(essay_runs[20]), str(essay_runs[120]), "--metrics", "hit@3,context_tokens@3"])
    table = main_table(report)
    col = table.columns.index("context_tokens@3")
    assert (0, col) in table.bold and (1, col) not in table.bold


@pytest.mark.slow
def test_relevance_coverage_sets_how_much_of_a_span_must_come_back(tmp_path_factory, make_config):
    # fresnel at 40 words: @1 holds 26 of its 29 words, @0 (ranked third) the other 3
    strict = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", "chunking.max_words=40", "relevance.coverage=1.0")
    row = _row(strict, "fresnel")
    assert row["first_relevant_rank"] == 3 and row["rr"] == pytest.approx(1 / 3)
    from receval.run import config
    from receval.core.errors import ConfigError

    for bad in ("0", "nan", "1.5"):
        with pytest.raises(ConfigError, match="relevance.coverage"):
            config.check(make_config(f"relevance.coverage={bad}"))


def test_word_spans_are_the_words_str_split_finds():
    from receval.chunking.wordspans import word_spans

    text = " a\u3000b\x1cc  d\u2028e\u00a0f \U0001F600g\t\u0085h\n"
    starts, ends = word_spans(text)
    assert [text[s:e] for s, e in zip(starts, ends)] == text.split()
