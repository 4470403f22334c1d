"""Hostile files and flags (issue 36, step 7): each is one message or one warning naming
the file, line or flag and the allowed values, never a traceback or a silent skip."""

from __future__ import annotations

import json
import os

import pytest
from forge import forged

from conftest import exit_code, one_error_line
from receval.cli import pool as pool_cli
from receval.core.errors import RecevalError, RecevalWarning
from receval.datasets.folder import read_pages
from receval.judge.job import read_pool
from receval.results.judgments import read_labels_jsonl


@pytest.mark.parametrize("grade", ["100000000000", "1e11", "1e400", "-1", "true", '"2"'])
def test_a_labels_grade_out_of_range_is_one_message_naming_the_line_and_range(tmp_path, grade):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"question_id": "q1", "id": "p#a", "grade": 2}\n'
                      f'{{"question_id": "q1", "id": "p#b", "grade": {grade}}}\n')
    with pytest.raises(RecevalError, match=r"labels\.jsonl:2: .*grade an integer from 0 to 1000 \(got 'q1', 'p#b', "):
        read_labels_jsonl(labels)


@pytest.mark.parametrize("grade, said", [("100000000000", r"grade of 'd' is 100000000000; use an integer from 1 to 1000"),
                                         ("1e400", r"relevance must be an integer, got '1e400'")])
def test_a_qrels_grade_out_of_range_given_to_labels_is_one_message(tmp_path, grade, said):
    from receval.results.judgments import read_any_labels

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q 0 a 1\nq 0 d {grade}\n")
    with pytest.raises(RecevalError, match=rf"qrels\.txt:2: {said}"):
        read_any_labels(qrels)


def test_labels_grades_at_the_ends_of_the_range_are_read(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"question_id": "q1", "id": "a", "grade": 0}\n{"question_id": "q1", "id": "b", "grade": 1000}\n')
    assert read_labels_jsonl(labels)[0] == {"q1": {"a": 0, "b": 1000}}


@pytest.mark.parametrize("seed", ["-1", "2147483648"])
def test_pool_seed_out_of_range_is_one_message_before_any_run_is_read(tmp_path, capsys, seed):
    argv = [tmp_path / "no-such-run", "--out", tmp_path / "pool.jsonl", "--calibrate", "3", "--seed", seed]
    assert exit_code(pool_cli.main, argv) == 2
    assert f"--seed {seed}: give an integer from 0 to 2147483647" in one_error_line(capsys)
    assert not (tmp_path / "pool.jsonl").exists()


@pytest.mark.parametrize("known", ['"x"', "2.5", "1e400", "-3", "100000", "true", "null"])
def test_a_tampered_pool_known_grade_is_one_message(tmp_path, known):
    pool = tmp_path / "pool.jsonl"
    hole = {"question_id": "q1", "question": "?", "id": "a", "text": "t", "role": "hole"}
    pool.write_text(json.dumps(hole) + "\n" + json.dumps({**hole, "id": "b", "role": "calibration"})[:-1]
                    + f', "known_grade": {known}}}\n')
    with pytest.raises(RecevalError, match=r"pool\.jsonl:2: known_grade .* is not a grade; a calibration line's "
                                           r"known_grade is an integer from 0 to 1000"):
        read_pool(pool)
    pool.write_text(json.dumps({**hole, "role": "calibration"}) + "\n")  # no known_grade at all
    with pytest.raises(RecevalError, match=r"pool\.jsonl:1: known_grade None is not a grade"):
        read_pool(pool)


def test_symlink_loops_and_dangling_page_links_are_warned_by_name(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "real.md").write_text("# Real\n\nSome text.\n")
    os.symlink(pages / "loop-b.md", pages / "loop-a.md")
    os.symlink(pages / "loop-a.md", pages / "loop-b.md")
    os.symlink(tmp_path / "gone.md", pages / "dangling.md")
    os.symlink(pages / "real.md", pages / "alias.md")  # a working link is a page like any other
    with pytest.warns(RecevalWarning) as caught:
        sections, files = read_pages(pages)
    said = sorted(str(w.message) for w in caught)
    assert said == [
        f"{pages / 'dangling.md'}: a link to {tmp_path / 'gone.md'}, which does not exist; "
        "page skipped: fix the link or remove it",
        f"{pages / 'loop-a.md'}: a symlink loop; page skipped: fix the link or remove it",
        f"{pages / 'loop-b.md'}: a symlink loop; page skipped: fix the link or remove it",
    ]
    assert [f.name for f in files] == ["alias.md", "real.md"]
    assert [s.id for s in sections] == ["alias#real", "real#real"]


@pytest.mark.slow
def test_the_agreement_file_is_not_replaced_without_force(tmp_path):
    from hydra import compose, initialize_config_dir

    from receval.run import config as config_schema
    from receval.judge.job import agreement_path, run_judge

    def judge(*overrides: str):
        config_schema.register_judge()
        with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
            return run_judge(compose("judge", overrides=list(overrides)))

    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"question_id": "q1", "question": "?", "id": "d1", "text": "t", "role": "hole"}) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\n")
    out = tmp_path / "labels.jsonl"
    side = agreement_path(out)
    side.write_text("someone's agreement file\n")  # the labels file itself is not there
    args = (f"pool={pool}", "judge=qrels", f"judge.path={qrels}", f"out={out}")
    with pytest.raises(RecevalError, match=r"labels\.jsonl\.agreement\.json already exists; pass force=true"):
        judge(*args)
    assert side.read_text() == "someone's agreement file\n" and not out.exists()
    judge(*args, "force=true")
    assert json.loads(side.read_text())["labelled"] == 1


# --------------------------------------------------------------------------- terminal escapes

HOSTILE = "bm25\x1b[31mRED\x1b]0;pwned\x07\u202eevil\x9b2J"
SHOWN = "bm25\\x1b[31mRED\\x1b]0;pwned\\x07\\u202eevil\\x9b2J"


def test_printable_shows_every_control_and_bidi_character_and_keeps_the_rest():
    from receval.core.terminal import printable, printable_lines

    assert printable(HOSTILE) == SHOWN
    assert printable("a\tb\nc\x00\x7f") == "a\\x09b\\x0ac\\x00\\x7f"
    assert printable("Café — naïve 日本 ∞ 🙂 []()") == "Café — naïve 日本 ∞ 🙂 []()"  # printable text untouched
    assert printable_lines("line\x1b[2J\nnext") == "line\\x1b[2J\nnext"


def test_tables_show_a_stored_names_escapes_in_every_terminal_format():
    from receval.render import tables

    table = tables.Table(columns=["#", f"retriever {HOSTILE}"], rows=[["0", HOSTILE]], title=HOSTILE, note=HOSTILE)
    for text in (tables.to_text([HOSTILE], [table]), tables.to_markdown([HOSTILE], [table])):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
        assert text.count(SHOWN) == 5  # header line, title, column, cell, note


def test_report_show_and_messages_show_escapes(capsys):
    from receval.analysis.show import QuestionView
    from receval.core.errors import report
    from receval.render.show import to_text

    view = QuestionView(question_id=HOSTILE, kind="direct", question=f"why?{HOSTILE}", relevant=[HOSTILE],
                        passages={}, runs=[])
    text = to_text([view], "all")
    assert "\x1b" not in text and text.startswith(f"{SHOWN} (direct): why?{SHOWN}\n  relevant: {SHOWN}\n")
    report(RecevalError(f"--runs {HOSTILE}: matches no run"))
    assert capsys.readouterr().err == f"receval: error: --runs {SHOWN}: matches no run\n"


@pytest.mark.slow
def test_report_and_list_print_a_stored_labels_escapes(six_runs, tmp_path, capsys):
    import shutil

    from receval.cli import list as list_command
    from receval.cli import report as report_command

    sweep = tmp_path / "s"
    for job in ("0", "3"):
        shutil.copytree(six_runs / job, sweep / job)
    saved = json.loads((sweep / "0" / "run.json").read_text())
    saved["config"]["retriever"]["kind"] = HOSTILE  # a run label is made of stored config values (params: derived)
    saved["label"]["what"] = HOSTILE
    saved["label"]["components"]["retriever"] = HOSTILE  # names come from the component's text the run wrote
    (sweep / "0" / "run.json").write_text(json.dumps(saved))
    forged(sweep / "0")  # a forger seals what they wrote; the names are still printed escaped
    for main in (report_command.main, list_command.main):
        assert exit_code(main, [sweep]) == 0
        out = capsys.readouterr().out
        assert SHOWN in out and "\x1b" not in out and "\u202e" not in out


@pytest.mark.slow
@pytest.mark.parametrize("grade", ["100000000000", "1e400"])
def test_report_labels_with_a_huge_grade_is_one_line_exit_2(six_runs, tmp_path, capsys, grade):
    from receval.cli import report as report_command

    labels = tmp_path / "labels.jsonl"
    labels.write_text(f'{{"question_id": "q01", "id": "privacy#your-privacy", "grade": {grade}}}\n')
    assert exit_code(report_command.main, [six_runs / "0", "--labels", labels]) == 2
    assert f"{labels}:1: question_id and id must be strings and grade an integer from 0 to 1000" \
        in one_error_line(capsys)
