"""The docs site: what a tutorial shows a command printing is what it prints today.

Every ``console`` block of docs/pages/tutorials/*.md is run (:mod:`docblocks`), and a
test of this test alters one shown number and sees it fail. The generated reference
pages equal a fresh generation; ``mkdocs build --strict`` passes; the built site opens in
headless Chromium with no console error and its search finds "select".

Refresh the shown outputs after a change to what commands print:

    RECEVAL_DOCS_UPDATE=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_docs.py -k tutorial
    (or: make docs-examples)
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from docblocks import ANY, TUTORIALS, Block, Step, blocks, differences, run_page, why_skipped

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
UPDATE = bool(os.environ.get("RECEVAL_DOCS_UPDATE"))
PAGES = sorted(TUTORIALS.glob("*.md"))


# ----------------------------------------------------------------- the comparison


def test_a_number_matches_to_the_precision_shown():
    assert differences(["MRR 0.73 [0.61, 0.85]"], ["MRR 0.734 [0.612, 0.849]"]) == []
    assert differences(["MRR 0.734"], ["MRR 0.7344"]) == []
    assert differences(["MRR 0.735"], ["MRR 0.734"]) != []
    assert differences(["1,092 tests"], ["1092 tests"]) == []
    assert differences(["hit@3 +0.021"], ["hit@3 -0.021"]) != []


def test_one_altered_number_in_a_table_fails_and_spacing_does_not():
    printed = ["#   retriever   hit@3     MRR", "0   bm25        0.766   0.734", "1   tfidf       0.787   0.707"]
    assert differences(["#  retriever  hit@3  MRR", "0  bm25  0.766  0.734", "1  tfidf  0.787  0.707"], printed) == []
    problems = differences(["#  retriever  hit@3  MRR", "0  bm25  0.766  0.734", "1  tfidf  0.787  0.708"], printed)
    assert problems[0] == "shown line 3: '1  tfidf  0.787  0.708'"


def test_paths_dates_and_times_are_masked_and_ellipsis_matches_what_varies():
    shown = ["[2026-11-29 10:00:00,123][HYDRA] done -> runs/2026-11-29/10-00-00/0", "p50 ms …", ANY, "end"]
    printed = ["[2027-01-02 23:59:58,001][HYDRA] done -> runs/2027-01-02/23-59-58/0", "p50 ms 0.291", "a", "b", "end"]
    assert differences(shown, printed) == []
    assert differences(shown, printed[:2] + ["end"]) == []  # ... matches no line too
    assert differences(shown, printed[:2] + ["fin"]) != []
    assert differences(["a", "b"], ["a", "b", "c"]) != []  # a line printed beyond the shown output


def test_blocks_split_into_steps_and_say_what_they_need(monkeypatch, tmp_path):
    page = (
        "intro\n\n```console\n$ receval --help\nusage: receval\n$ echo hi\nhi\n```\n\n"
        "<!-- docs-test: needs RECEVAL_SHARED -->\n```console\n$ receval list x\n```\n"
        "<!-- docs-test: skip an LLM endpoint -->\n```console\n$ receval synth\n```\n```text\n$ not run\n```\n"
    )
    found = blocks(page)
    assert [[s.command for s in b.steps] for b in found] == [["receval --help", "echo hi"], ["receval list x"], ["receval synth"]]
    assert found[0].steps[0].shown == ["usage: receval"]
    monkeypatch.setenv("RECEVAL_SHARED", str(tmp_path / "absent"))
    assert "needs RECEVAL_SHARED" in why_skipped(found[1])
    (tmp_path / "datasets").mkdir()
    monkeypatch.setenv("RECEVAL_SHARED", str(tmp_path))
    assert why_skipped(found[1]) is None and why_skipped(found[0]) is None
    assert why_skipped(found[2]) == "shown, not run: an LLM endpoint"


@pytest.mark.slow
def test_the_docs_test_fails_when_a_shown_number_is_changed(tmp_path):
    """The test of the test: a tutorial's first block, one number in its shown output
    altered by one in its last digit, fails; unaltered, it passes."""
    page = PAGES[0]
    first = next(b for b in blocks(page.read_text()) if not why_skipped(b) and any(s.shown for s in b.steps))
    original = page.read_text()[first.start:first.end]
    numbers = list(re.finditer(r"(?<![\w.@-])\d+\.\d+(?![\w.])", original))
    assert numbers, f"{page.name}'s first block shows no number"
    at = numbers[len(numbers) // 2]
    last = int(at.group()[-1])
    altered = original[: at.end() - 1] + str((last + 1) % 10) + original[at.end():]
    for text, fails in ((original, False), (altered, True)):
        work = tmp_path / ("altered" if fails else "original")
        work.mkdir()
        copy = work / page.name
        copy.write_text(f"```console\n{text}```\n")
        failures, _ = run_page(copy, work)
        assert bool(failures) is fails, failures
    assert at.group() not in failures[0].splitlines()[1]  # the altered line is the one named


@pytest.mark.slow
def test_a_block_that_prints_other_text_fails_and_update_rewrites_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ echo \"hit@3 0.766 took 0.$RANDOM$RANDOM ms\"\nhit@3 0.767 took … ms\n```\n")
    failures, _ = run_page(page, tmp_path / "1")
    assert failures and "shown line 1" in failures[0]
    run_page(page, tmp_path / "2", update=True)  # the number it prints differently each run becomes …
    assert re.fullmatch(r"```console\n\$ echo .*\nhit@3 0\.766 took +… ms\n```\n", page.read_text()), page.read_text()
    assert run_page(page, tmp_path / "3") == ([], [])


# ----------------------------------------------------------------- the tutorials


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_shows_what_its_commands_print(page, tmp_path):
    failures, skips = run_page(page, tmp_path, update=UPDATE)
    assert not failures, "\n\n".join(failures) + "\n\nrefresh with: RECEVAL_DOCS_UPDATE=1 pytest tests/test_docs.py -k tutorial"
    ran = sum(1 for b in blocks(page.read_text()) if not why_skipped(b))
    if skips and not ran:
        pytest.skip("; ".join(skips))
