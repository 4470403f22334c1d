"""ROUGE precision of questions against their passages: by hand, and against rouge-score."""

from __future__ import annotations

import numpy as np
import pytest

from receval.datasets import LIBRARY, Question, Section, folder
from receval.datasets.questions import read_questions
from receval.analysis.breakdown import overlap_bucket
from receval.measures.overlap import (
    COLUMNS,
    lcs_length,
    overlap_columns,
    rouge_precision,
    tokenize,
)

from conftest import lazy_import

rouge_scorer = lazy_import("rouge_score.rouge_scorer")

PAIRS = [  # (question, passage)
    ("What is the loan period for DVDs?", "The loan period for DVDs is one week."),
    ("the the the cat", "the cat"),
    ("How much is a day pass?", "A day pass costs £6 and covers unlimited rides of up to one hour each."),
    ("Wi-Fi PASSWORD??", "The wi-fi password is printed on your library card receipt."),
    ("Can I bring my café latte inside?", "Hot drinks from the café are welcome in the reading room."),
    ("", "Any passage at all."),
    ("?!", "Punctuation only in the question."),
    ("Fines", "Fines are charged daily."),
    ("fines", ""),
    ("Do you open on Sundays in 2024, 10:00-16:00?", "Open Sundays 10:00 to 16:00 (2024 hours)."),
    ("a b a b a b", "b a b a"),
    ("rides rides ride riding", "Riding a ride: ride rides."),
    ("İstanbul ΣΟΦΙΑ naïve résumé", "istanbul naive resume sofia"),
    ("Is the 3D printer free to use?", "The 3D printer costs 10p per gram; staff print for you."),
    ("x y z", "z y x"),
    ("one two three four five", "one two three four five"),
    ("What happens if I return a bike to a full station?",
     "If a station is full, the app shows the nearest one with free docks and adds 15 free minutes."),
    ("Which lights do bikes have at night?",
     "Every bike has front and rear lights that switch on automatically when you ride."),
    ("tab\tseparated\nnew line question", "new line question separated by tab"),
    ("e-mail e.mail e_mail", "email e mail"),
]


@pytest.fixture(scope="module")
def scorer():
    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)


def reference(scorer, question: str, passage: str) -> tuple[float, float, float]:
    scores = scorer.score(target=passage, prediction=question)
    return scores["rouge1"].precision, scores["rouge2"].precision, scores["rougeL"].precision


@pytest.mark.parametrize("question, passage", PAIRS)
@pytest.mark.slow
def test_agrees_with_rouge_score(scorer, question, passage):
    assert rouge_precision(question, passage) == pytest.approx(reference(scorer, question, passage), abs=1e-9)


def test_agrees_with_rouge_score_on_the_library(scorer):
    sections = folder.read_pages(LIBRARY / "pages")[0]
    by_id = {s.id: s for s in sections}
    questions = read_questions(LIBRARY / "questions.jsonl", sections)
    columns = overlap_columns(questions, by_id)
    checked = 0
    for i, question in enumerate(questions):
        if not question.relevant:
            assert all(columns[name][i] is None for name in COLUMNS)
            continue
        refs = [reference(scorer, question.text, by_id[sid].text) for sid in question.relevant]
        expected = np.max(np.asarray(refs), axis=0)  # each measure's max over the passages
        got = [columns[name][i] for name in COLUMNS]
        assert got == pytest.approx(expected.tolist(), abs=1e-9)
        checked += 1
    assert checked >= 20


def test_worked_by_hand():
    # q: what is the loan period for dvds (7 words); p: the loan period for dvds is one week
    r1, r2, rl = rouge_precision("What is the loan period for DVDs?", "The loan period for DVDs is one week.")
    assert r1 == pytest.approx(6 / 7)  # every word but "what"
    assert r2 == pytest.approx(4 / 6)  # the-loan, loan-period, period-for, for-dvds of 6 bigrams
    assert rl == pytest.approx(5 / 7)  # "the loan period for dvds"; "is" comes before it in q
    # counts are clipped: "the" thrice in q, once in p
    assert rouge_precision("the the the cat", "the cat") == pytest.approx((2 / 4, 1 / 3, 2 / 4))
    assert rouge_precision("x y z", "z y x") == pytest.approx((1.0, 0.0, 1 / 3))
    assert rouge_precision("", "anything") == (0.0, 0.0, 0.0)
    assert rouge_precision("Fines", "Fines are charged")[1] == 0.0  # one word has no bigram


def test_tokenizer_matches_rouge_score_default():
    from rouge_score import tokenize as reference_tokenize

    assert tokenize("Wi-Fi PASSWORD?? 10:00") == ["wi", "fi", "password", "10", "00"]
    assert tokenize("café naïve") == ["caf", "na", "ve"]  # non-ASCII letters separate words
    for question, passage in PAIRS:
        for text in (question, passage):
            assert tokenize(text) == reference_tokenize.tokenize(text, None)


def textbook_lcs(a, b) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def test_lcs_equals_the_textbook_dp():
    rng = np.random.default_rng(7)
    for _ in range(300):
        a = rng.integers(0, 5, rng.integers(0, 12)).tolist()
        b = rng.integers(0, 5, rng.integers(0, 40)).tolist()
        assert lcs_length(a, b) == lcs_length(b, a) == textbook_lcs(a, b)


def test_columns_take_the_best_passage_and_leave_unanswerable_empty():
    sections = {
        "a#x": Section("a#x", "a", ("A", "X"), "Opening hours are nine to five on weekdays."),
        "a#y": Section("a#y", "a", ("A", "Y"), "Lost property is kept for a month."),
    }
    questions = [
        Question("q1", "When is lost property kept until opening hours?", "multi", "dev", {"a#x": 1, "a#y": 1}),
        Question("q2", "Do you sell coffee?", "unanswerable", "test", {}),
        Question("q3", "Lost property is kept?", "direct", "dev", {"a#y": 1}),
    ]
    columns = overlap_columns(questions, sections)
    assert list(columns) == ["rouge1_p", "rouge2_p", "rougeL_p"]
    both = [rouge_precision(questions[0].text, s.text) for s in sections.values()]
    assert [columns[n][0] for n in COLUMNS] == pytest.approx(np.max(both, axis=0).tolist())
    assert [columns[n][1] for n in COLUMNS] == [None, None, None]
    assert [columns[n][2] for n in COLUMNS] == [1.0, 1.0, 1.0]
    with pytest.raises(KeyError, match="'q9' labels 'a#z'"):
        overlap_columns([Question("q9", "x", "direct", "dev", {"a#z": 1})], sections)


def test_buckets():
    values = [0.0, 0.29999, 0.3, 0.59, 0.6, 1.0, None, float("nan")]
    assert overlap_bucket(values) == ["low", "low", "medium", "medium", "high", "high", None, None]
    assert overlap_bucket([0.5], thresholds=(0.5, 0.8)) == ["medium"]
    assert overlap_bucket(np.array([0.1, 0.9])) == ["low", "high"]
    with pytest.raises(ValueError, match="0 <= low <= high <= 1"):
        overlap_bucket([0.1], thresholds=(0.6, 0.3))


def dp_lcs(a, b) -> int:
    """The dynamic programme, one numpy row per token of ``a`` (receval's former LCS)."""
    b = np.asarray(b, dtype=np.int64)
    prev = np.zeros(len(b) + 1, dtype=np.int64)
    for token in a:
        candidate = np.maximum(prev[1:], np.where(b == token, prev[:-1] + 1, 0))
        prev = np.concatenate([[0], np.maximum.accumulate(candidate)])
    return int(prev[-1])


def test_lcs_equals_the_textbook_dp_across_several_64_bit_words():
    rng = np.random.default_rng(11)
    for _ in range(60):
        a = rng.integers(0, 9, rng.integers(1, 30)).tolist()
        b = rng.integers(0, 9, rng.integers(60, 400)).tolist()  # r up to 400 bits: several words, carries between them
        assert lcs_length(a, b) == lcs_length(b, a) == textbook_lcs(a, b)


def test_a_17m_word_section_costs_its_question_words_occurrences_not_its_length():
    """ROUGE-L against a 1.7M-word section: exact (equal to the DP), and the bit-parallel
    LCS runs at most len(question) steps over integers of r bits, r = the section's
    occurrences of the question's words (here under 5% of it), instead of the DP's
    len(question) x 1.7M cells."""
    from receval.measures.overlap import _Index, lcs_work

    rng = np.random.default_rng(3)
    n = 1_700_000
    passage = (20_000.0 ** rng.random(n)).astype(np.int64) - 1  # ids 0..19,999, frequency ~ 1/id (Zipf-like)
    question = [7, 9_000, 412, 15_000, 30, 2_500, 19_999, 7, 611, 12_345, 30, 3_000]  # common and rare ids
    length, steps, r = lcs_work(question, _Index(passage))
    assert length == dp_lcs(question, passage)
    assert r == int(np.isin(passage, question).sum())  # only those positions become bits
    assert steps <= len(question) and r < 0.05 * n
    assert steps * -(-r // 64) < len(question) * n / 1000  # word operations against the DP's cells
