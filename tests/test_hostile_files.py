"""Hostile files and flags (issue 36, step 7): each is one message or one warning naming
the file, line or flag and the allowed values, never a traceback or a silent skip."""

from __future__ import annotations

import json
import os

import pytest

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

    from receval import config as config_schema
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
