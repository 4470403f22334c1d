"""The docs site: what a tutorial or a how-to page shows a command printing is what it
prints today.

Every ``console`` block of docs/pages/tutorials/*.md, docs/pages/how-to/*.md and the
README is run (:mod:`docblocks`); a block that cannot run here is one skipped test saying
why; a test of this test alters one shown number and sees it fail. The generated reference
pages equal a fresh generation; ``mkdocs build --strict`` passes; the built site opens in
headless Chromium with no console error and its search finds "select".

Refresh the shown outputs after a change to what commands print:

    make docs-examples
    (= RECEVAL_DOCS_UPDATE=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_docs.py -k shows_what;
     RECEVAL_DOCS_UPDATE=all rewrites every shown output, not only those that no longer match)
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
from docblocks import ANY, HOWTO, TUTORIALS, Block, Step, blocks, differences, run_page, why_skipped

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
UPDATE = {"": False, "all": "all"}.get(os.environ.get("RECEVAL_DOCS_UPDATE", ""), True)
PAGES = sorted(TUTORIALS.glob("*.md"))
TESTED = [*PAGES, ROOT / "README.md"]  # the README's tour is run too
HOWTOS = sorted(HOWTO.glob("*.md"))
#: every block no page may run here: (page, its number on the page, why)
UNRUN = [(page, i + 1, why_skipped(block)) for page in [*TESTED, *HOWTOS]
         for i, block in enumerate(blocks(page.read_text(encoding="utf-8"))) if why_skipped(block)]


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


def test_a_command_may_span_lines_and_a_block_may_sit_in_a_list_item():
    page = (
        "- a list item:\n\n  <!-- docs-test: skip needs a cluster -->\n  ```console\n  $ receval a=1 \\\n"
        "      b=2\n  printed\n  ```\n\n```console\n$ receval sql runs \"SELECT x,\n    y FROM runs\"\nx  y\n"
        "$ echo it's  # an apostrophe in a comment leaves no quote open\n…\n```\n"
    )
    listed, sql = blocks(page)
    assert listed.indent == "  " and why_skipped(listed) == "shown, not run: needs a cluster"
    assert [(s.command, s.shown) for s in listed.steps] == [("receval a=1 \\\n    b=2", ["printed"])]
    assert sql.steps[0].command == 'receval sql runs "SELECT x,\n    y FROM runs"' and sql.steps[0].shown == ["x  y"]
    assert sql.steps[1].command.startswith("echo it's") and sql.steps[1].by_status
    assert not sql.steps[0].by_status


@pytest.mark.slow
def test_a_step_checked_by_its_exit_status_fails_when_it_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ true\n$ echo long output\n…\n$ exit 3\n```\n")
    failures, _ = run_page(page, tmp_path / "run")
    assert len(failures) == 1 and failures[0].startswith("page.md: $ exit 3\nexit status 3")
    page.write_text('```console\n$ (exit 3); echo "exit status $?"\nexit status 3\n```\n')  # shown: compared, not its status
    assert run_page(page, tmp_path / "again") == ([], [])


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


def _page_runs(page: Path, tmp_path: Path) -> None:
    failures, skips = run_page(page, tmp_path, update=UPDATE)
    assert not failures, "\n\n".join(failures) + "\n\nrefresh with: RECEVAL_DOCS_UPDATE=1 pytest tests/test_docs.py -k shows_what"
    ran = sum(1 for b in blocks(page.read_text()) if not why_skipped(b))
    if skips and not ran:
        pytest.skip("; ".join(skips))


@pytest.mark.slow
@pytest.mark.parametrize("page", TESTED, ids=[p.stem for p in TESTED])
def test_tutorial_shows_what_its_commands_print(page, tmp_path):
    _page_runs(page, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", HOWTOS, ids=[p.stem for p in HOWTOS])
def test_how_to_page_shows_what_its_commands_print(page, tmp_path):
    """Each how-to page's blocks, in order in one folder: shown outputs compared, the
    rest checked by exit status (:mod:`docblocks`)."""
    _page_runs(page, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page, number, why", UNRUN, ids=[f"{p.stem}-{n}" for p, n, _ in UNRUN])
def test_a_block_that_cannot_run_here_says_why(page, number, why):
    """One skip per block a page marks ``docs-test: skip``/``needs``, its reason in the summary."""
    assert why and not why.endswith("needs what the test machine lacks"), f"{page.name} block {number} gives no reason"
    pytest.skip(f"{page.relative_to(ROOT)} block {number}: {why}")


COMMAND = re.compile(r"^[ \t]*(?:\$ )?(?:[A-Z_]+=\S* )*(?:receval|python -m receval)\b(?!:)")
OPEN = re.compile(r"^([ \t]*)```(\w*)")


def fenced(text: str) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """A page's fenced blocks (language, lines) and its lines outside every fence."""
    found, outside, current = [], [], None
    for line in text.splitlines():
        if current is None:
            opened = OPEN.match(line)
            if opened:
                current = (opened.group(1), opened.group(2), [])
            else:
                outside.append(line)
        elif line.strip() == "```" and line.startswith(current[0]):
            found.append((current[1], current[2]))
            current = None
        else:
            current[2].append(line)
    return found, outside


def test_every_how_to_command_is_in_a_block_that_runs_or_says_why():
    """No how-to page leaves a command to be read and not run: every ``receval`` command
    line in a fenced or indented code block sits in a ``console`` block (run, or skipped
    with a reason); a workflow file (YAML) and Python are not commands; each page has a
    console block."""
    bare = []
    for page in HOWTOS:
        text = page.read_text(encoding="utf-8")
        assert blocks(text), f"{page.name}: no console block"
        found, outside = fenced(text)
        for language, lines in found:
            if language not in ("console", "yaml", "python"):
                bare += [f"{page.name}: {line.strip()}" for line in lines if COMMAND.match(line)]
        bare += [f"{page.name}: {line.strip()}" for line in outside if line.startswith(("    ", "\t")) and COMMAND.match(line)]
    assert not bare, "commands outside a console block:\n" + "\n".join(bare)


# ----------------------------------------------------------------- the site


def _reference():
    sys.path.insert(0, str(DOCS))
    try:
        import gen_reference
    finally:
        sys.path.remove(str(DOCS))
    return gen_reference


@pytest.mark.slow
def test_the_generated_reference_pages_equal_a_fresh_generation():
    gen = _reference()
    fresh = gen.generate()
    for name, text in fresh.items():
        committed = (gen.OUT / name).read_text(encoding="utf-8")
        assert committed == text, f"docs/pages/reference/{name} is stale: run make docs (python docs/gen_reference.py)"
    from receval.cli.main import available

    assert all(f"## receval {name}\n" in fresh["commands.md"] for name in available())
    assert "| `retriever.k1` | float | `1.2` | number in [0, 1000] |" in fresh["configuration.md"]
    assert "`question_id`" in fresh["stored-format.md"] and "run.json" in fresh["stored-format.md"]


def test_a_field_s_meaning_is_the_comment_beside_or_above_it():
    from receval.run.config import RecevalConfig

    meanings = _reference().field_comments(RecevalConfig)
    assert meanings["depth"] == "chunks kept per question before collapsing to sections; beyond the chunks it is capped"
    assert meanings["cache_dir"] == "chunks, token counts, embeddings; null: off"


def test_every_receval_path_a_page_names_exists():
    """A page naming receval/x.py or tests/y.py names a file that is there (no stale code map)."""
    missing = []
    for page in (DOCS / "pages").rglob("*.md"):
        for path in re.findall(r"(?<![\w/.])((?:receval|tests|benchmarks|conf)/[\w/.-]*\w)", page.read_text()):
            written_by_the_reader = "mine" in path
            if "*" not in path and "<" not in path and not written_by_the_reader and not (ROOT / path).exists():
                missing.append(f"{page.relative_to(DOCS)}: {path}")
    assert not missing, "\n".join(missing)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built with mkdocs --strict (a broken link or a page outside the nav fails)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(DOCS / "mkdocs.yml"), "-d", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_the_site_builds_strictly_and_its_search_index_holds_select(site):
    index = json.loads((site / "search" / "search_index.json").read_text())
    hits = [doc["location"] for doc in index["docs"] if re.search(r"\bselect\b", doc["text"] + doc["title"])]
    assert any(h.startswith("tutorials/stages-then-select.html") for h in hits), hits[:10]
    assert all((site / f"{p}".replace(".md", ".html")).is_file()
               for p in ["index.md", "tutorials/chunk-size.md", "reference/commands.md", "benchmarks.md"])


@pytest.fixture
def served(site):
    """The built site on a loopback HTTP server (Material's search runs in a web worker,
    which a file:// page may not start)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


SEARCH = """new Promise(done => {
  const input = document.querySelector('input.md-search__input');
  if (!input) { done('no search box'); return; }
  let tries = 0;
  const poll = () => {
    input.focus();
    input.value = 'select';
    input.dispatchEvent(new Event('focus'));
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new KeyboardEvent('keyup', {key: 't', bubbles: true}));
    const items = [...document.querySelectorAll('.md-search-result__item a')].map(a => a.getAttribute('href'));
    if (items.length || ++tries > 60) { done(items); return; }
    setTimeout(poll, 250);
  };
  poll();
})"""


@pytest.mark.slow
def test_the_site_opens_in_chromium_without_errors_and_search_finds_select(served):
    browser = pytest.importorskip("browser")
    if browser.CHROMIUM is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
    for page in ("index.html", "tutorials/stages-then-select.html", "reference/configuration.html"):
        opened = browser.open_page(served + page)
        assert opened.errors == [], (page, opened.errors)
        assert all(u.startswith(served) or u.startswith("data:") for u in opened.requests), opened.requests
    found = browser.open_page(served + "index.html", evaluate=(SEARCH,))
    assert found.errors == [], found.errors
    hits = found.values[0]
    assert isinstance(hits, list) and any("select" in h for h in hits), hits


def test_update_masks_a_whole_column_when_one_of_its_cells_varies():
    from docblocks import updated

    printed = ["#   name   p50 ms", "0   bm25    0.159", "1   tfidf   0.210", "done 0.5"]
    again = ["#   name   p50 ms", "0   bm25    0.159", "1   tfidf   0.233", "done 0.5"]
    assert updated([], printed, again) == ["#   name   p50 ms", "0   bm25        …", "1   tfidf       …", "done 0.5"]
