"""The docs' shown commands, run: a ```` ```console ```` block in a tutorial or a how-to
page holds ``$ command`` lines, each followed by what it prints. :func:`run_page` runs a
page's blocks in order in one fresh folder (a page's steps build on each other) and
:func:`differences` says where the printed text departs from the shown text. A step
that shows no output, or only ``…`` (its output is long or varies), is checked by its
exit status instead: it must exit 0 (a step that means to fail shows what it prints, or
ends ``; echo "exit status $?"`` and shows that line). The folder has ``tests/fixtures``
of this checkout, so a page may name ``tests/fixtures/essays`` as a reader in the
checkout would.

Compared token by token (spacing is free: a table's columns may widen):

- a number matches to the precision shown (``0.73`` matches a printed ``0.734``);
- paths under the run folder, dates and times of day are masked on both sides;
- ``…`` shown in place of a token matches any one token (a latency, which varies), and
  a line holding only ``…`` matches any number of lines.

A block may say what it needs in an HTML comment just before it (not shown on the
site): ``<!-- docs-test: needs RECEVAL_SHARED -->`` skips it, saying so, unless that
environment variable names a folder holding ``datasets/`` (``../shared`` is tried when it
is unset); ``<!-- docs-test: skip REASON -->`` never runs it. A block titled with a file
name (```` ```python title="my_rag.py" ````) is written to that file first.

Run by ``tests/test_docs.py``; ``RECEVAL_DOCS_UPDATE=1`` rewrites each shown output that
no longer matches with what the command prints now (``RECEVAL_DOCS_UPDATE=all``: every
shown output), ``…`` in place of what varies between two runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "pages" / "tutorials"
HOWTO = ROOT / "docs" / "pages" / "how-to"
ANY = "…"
SHARED_DEFAULT = ROOT.parent / "shared"  # what conf/collection/*.yaml read: ${RECEVAL_SHARED}/datasets/<name>
FENCE = re.compile(  # a console block, indented as a whole inside a list item or not, its note above it
    r"^(?P<indent>[ \t]*)(?:<!-- docs-test: (?P<note>[^>]*?) -->\n(?P=indent))?```console\n(?P<body>.*?)^(?P=indent)```$",
    re.S | re.M,
)
FILE = re.compile(r'^```\w+ title="(?P<name>[\w./-]+)"\n(?P<body>.*?)^```$', re.S | re.M)
NUMBER = re.compile(r"^[\[(]?([+-]?\d+(?:,\d{3})*(?:\.(\d+))?)(%|[\])},;:]*)$")
MASKS = [
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    # a time of day; a run folder's name: its time to the microsecond, then the process id
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b|\b\d{2}-\d{2}-\d{2}(?:-\d+)*\b"), "<time>"),
]


@dataclass
class Step:
    command: str
    shown: list[str]

    @property
    def by_status(self) -> bool:
        """The step shows no output of its own (nothing, or only ``…``): its exit status is checked."""
        return all(not line.strip() or line.strip() == ANY for line in self.shown)


@dataclass
class Block:
    start: int  # offset of the block's body in the page
    end: int
    note: str
    steps: list[Step] = field(default_factory=list)
    indent: str = ""  # of every line, inside a list item


def _continues(command: str) -> bool:
    """Whether a command's next line belongs to it: it ends in ``\\`` or leaves a quote open."""
    if command.endswith("\\"):
        return True
    try:
        shlex.split(command, comments=True)
    except ValueError:  # no closing quotation
        return True
    return False


def blocks(text: str) -> list[Block]:
    """The ``console`` blocks of a page, each split into ``$ command`` steps (a command
    may run over several lines: a line ending in ``\\``, or a quote left open)."""
    found = []
    for match in FENCE.finditer(text):
        indent = match.group("indent")
        block = Block(match.start("body"), match.end("body"), (match.group("note") or "").strip(), indent=indent)
        for line in match.group("body").splitlines():
            line = line[len(indent):] if line.startswith(indent) else line
            if block.steps and not block.steps[-1].shown and _continues(block.steps[-1].command):
                block.steps[-1].command += "\n" + line
            elif line.startswith("$ "):
                block.steps.append(Step(line[2:], []))
            elif block.steps:
                block.steps[-1].shown.append(line)
        found.append(block)
    return found


def why_skipped(block: Block) -> str | None:
    """Why ``block`` cannot run here, or None."""
    note = block.note
    if note.startswith("skip"):
        return f"shown, not run: {note[4:].strip() or 'needs what the test machine lacks'}"
    if note.startswith("needs"):
        var = note.split()[1]
        where = os.environ.get(var) or (str(SHARED_DEFAULT) if var == "RECEVAL_SHARED" else "")
        inside = Path(where) / "datasets" if var == "RECEVAL_SHARED" else Path(where)
        if not where or not inside.is_dir():
            return f"needs {var} (the folder holding datasets/cranfield and datasets/scifact, ../shared by default): not found here"
    return None


def environment(workdir: Path) -> dict:
    """``receval`` on PATH as this Python's ``-m receval`` and ``python`` as this Python;
    a private cache; fixed widths; ``tests/fixtures`` of this checkout in the folder."""
    bin_dir = workdir / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for name, line in (("receval", f'"{sys.executable}" -m receval'), ("python", f'"{sys.executable}"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {line} "$@"\n')
        shim.chmod(0o755)
    fixtures = workdir / "tests" / "fixtures"
    if not fixtures.exists():
        fixtures.parent.mkdir(exist_ok=True)
        fixtures.symlink_to(ROOT / "tests" / "fixtures", target_is_directory=True)
    shared = os.environ.get("RECEVAL_SHARED") or str(SHARED_DEFAULT)
    return {
        **os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "120",
        "RECEVAL_CACHE_DIR": str(workdir / ".cache"), "RECEVAL_SHARED": shared, "NO_COLOR": "1",
        "TERM": "dumb", "PYTHONWARNINGS": "ignore",
    }


@dataclass
class Printed:
    """What a step printed (stdout then stderr, as lines) and its exit status."""

    lines: list[str]
    status: int


def run_step(step: Step, workdir: Path, env: dict) -> Printed:
    """What ``step.command`` prints (stdout then stderr), in ``workdir``, and its exit status."""
    done = subprocess.run(
        ["bash", "-c", step.command], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
    )
    text = (done.stdout + done.stderr).replace(str(workdir), ".")
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return Printed(lines, done.returncode)


def _mask(line: str) -> str:
    for pattern, placeholder in MASKS:
        line = pattern.sub(placeholder, line)
    return line


def _token_matches(shown: str, printed: str) -> bool:
    if shown == ANY or shown == printed:
        return True
    a, b = NUMBER.match(shown), NUMBER.match(printed)
    if not (a and b) or a.group(3) != b.group(3) or shown[:1] != printed[:1] and shown[:1] in "[(":
        return False
    places = len(a.group(2) or "")
    try:
        value = float(b.group(1).replace(",", ""))
        return f"{value:,.{places}f}" == a.group(1) or f"{value:.{places}f}" == a.group(1)
    except ValueError:
        return False


def line_matches(shown: str, printed: str) -> bool:
    s, p = _mask(shown).split(), _mask(printed).split()
    return len(s) == len(p) and all(_token_matches(x, y) for x, y in zip(s, p))


def differences(shown: list[str], printed: list[str]) -> list[str]:
    """Where ``printed`` departs from ``shown`` (empty: they agree)."""
    shown = [line.rstrip() for line in shown]
    while shown and not shown[-1]:
        shown.pop()

    def match(i: int, j: int) -> int | None:  # index in shown of the first mismatch, else None
        while i < len(shown):
            if shown[i].strip() == ANY:
                return next((None for k in range(j, len(printed) + 1) if match(i + 1, k) is None), i)
            if j >= len(printed) or not line_matches(shown[i], printed[j]):
                return i
            i, j = i + 1, j + 1
        return None if j == len(printed) else len(shown)

    bad = match(0, 0)
    if bad is None:
        return []
    near = shown[bad] if bad < len(shown) else "(end of the shown output)"
    return [f"shown line {bad + 1}: {near!r}", "printed:", *printed]


def updated(shown: list[str], printed: list[str], again: list[str]) -> list[str]:
    """What a block shows for ``printed``: ``…`` in place of each token that a second
    run (``again``, in another fresh folder) printed differently (a latency), in every
    row of that column of its table (consecutive lines with as many tokens: a latency
    that happened to repeat is masked too), and where the old block showed ``…`` in a
    line with as many tokens."""
    split = [line.split() for line in printed]
    vary: list[set[int]] = []
    for i, tokens in enumerate(split):
        other = again[i].split() if i < len(again) and len(printed) == len(again) else tokens
        old = shown[i].split() if i < len(shown) else []
        found = {k for k, token in enumerate(tokens) if len(other) == len(tokens) and _mask(other[k]) != _mask(token)}
        if ANY in old and len(old) == len(tokens):
            found |= {k for k, token in enumerate(old) if token == ANY}
        vary.append(found)
    i = 0
    while i < len(split):  # one table: consecutive lines with as many tokens
        j = i
        while j + 1 < len(split) and split[j + 1] and len(split[j + 1]) == len(split[i]):
            j += 1
        columns = set().union(*vary[i:j + 1])
        numeric = {k for k in columns if all(NUMBER.match(split[r][k]) or split[r][k] == "-" for r in range(i, j + 1))}
        for r in range(i, j + 1):
            vary[r] |= numeric
        i = j + 1
    out = []
    for line, found in zip(printed, vary):
        spans = [m.span() for m in re.finditer(r"\S+", line)]
        for k in sorted(found, reverse=True):
            start, end = spans[k]
            line = line[:start] + ANY.rjust(end - start) + line[end:]
        out.append(line)
    return out


def files(text: str) -> list[tuple[int, str, str]]:
    """(offset, name, content) of each block titled with a file name (```` ```python
    title="my_retriever.py" ````): written into the folder before the blocks after it run."""
    return [(m.start(), m.group("name"), m.group("body")) for m in FILE.finditer(text)]


def _run_all(text: str, found: list[Block], workdir: Path) -> list[list[Printed] | None]:
    """Every runnable block's steps' printed lines, run in order in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = environment(workdir)
    written, outputs = files(text), []
    for block in found:
        while written and written[0][0] < block.start:
            _, name, body = written.pop(0)
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / name).write_text(body)
        outputs.append(None if why_skipped(block) else [run_step(s, workdir, env) for s in block.steps])
    return outputs


def run_page(path: Path, workdir: Path, update: bool | str = False) -> tuple[list[str], list[str]]:
    """Run every block of the page at ``path`` in order in ``workdir``: (failures, skips).
    With ``update``, rewrite the shown output of each step that no longer matches (every
    step's with ``update="all"``) instead, running the page twice, in two fresh folders,
    to find what varies between runs."""
    text = path.read_text(encoding="utf-8")
    found = blocks(text)
    skips = [f"{path.name}: $ {b.steps[0].command if b.steps else ''}: {why_skipped(b)}" for b in found if why_skipped(b)]
    printed = _run_all(text, found, workdir / "run")
    failures = []
    for block, outputs in zip(found, printed):
        for step, done in zip(block.steps, outputs or []):
            problems = [] if update else differences(step.shown, done.lines)
            if step.by_status and done.status != 0:  # no rewrite of the shown output hides it
                problems = [f"exit status {done.status} (a step showing no output of its own must exit 0)",
                            "printed:", *done.lines]
            if problems:
                failures.append("\n".join([f"{path.name}: $ {step.command}", *problems]))
    if not update or failures:
        return failures, skips
    again = _run_all(text, found, workdir / "again")
    for block, outputs, outputs_again in reversed(list(zip(found, printed, again))):
        if outputs is None:
            continue
        body = []
        for step, done, done_again in zip(block.steps, outputs, outputs_again):
            keep = update != "all" and not differences(step.shown, done.lines)
            old = [] if update == "all" else step.shown  # "all": a fresh account, no … kept from before
            body += [f"$ {step.command}", *(step.shown if keep else updated(old, done.lines, done_again.lines))]
        lines = "\n".join(body).rstrip("\n").splitlines()
        text = text[: block.start] + "".join(f"{block.indent}{line}\n" for line in lines) + text[block.end:]
    path.write_text(text, encoding="utf-8")
    return [], skips
