"""The ``folder`` format: ``pages/*.md`` plus ``questions.jsonl``.

A section is the text under a Markdown heading (``#`` to ``######``) up to the next
heading of any level; headings inside fenced code blocks are text. Its id is
``<page file stem>#<slug>`` and its heading path runs from the page title down
("Fines > Late returns"). A heading with no text under it is not a section. Text
before a page's first heading is a section headed by the page stem.

Slug rule: lowercase; delete apostrophes; every run of characters that are not
letters or digits becomes one ``-``; strip ``-`` at both ends ("Children's cards" ->
``childrens-cards``). When a page repeats a slug, the second heading gets ``-2``,
the third ``-3``, and so on in page order, skipping any id already taken.

Questions, one JSON object per line: ``{"id", "question", "kind", "split",
"relevant"}``; ``relevant`` is a list of section ids or an object id -> grade
(integer >= 1); ``evidence`` (quotes) and ``spans`` (page character offsets) label
passages instead (:mod:`receval.datasets.evidence`). ``kind`` defaults to ``unspecified`` and
``split`` to ``all``; a question with no labels must have kind ``unanswerable``.
Sections keep their character offsets into the page text.
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from pathlib import Path

from receval.datasets.types import LIBRARY, Dataset, Section, fingerprint
from receval.datasets.questions import read_questions
from receval.core.errors import DatasetError
from receval.core.marks import MARKS
from receval.core.progress import warn

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")  # CommonMark ATX
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_APOSTROPHES = re.compile(r"['\u2019]")
_NOT_SLUG = re.compile(f"(?:[^\\w{MARKS}]|_)+")  # runs of what is neither a letter, a digit nor a combining mark


def slugify(heading: str) -> str:
    """The heading slug by the documented rule ("Late returns" -> ``late-returns``)."""
    text = _APOSTROPHES.sub("", unicodedata.normalize("NFC", heading).lower())
    slug = _NOT_SLUG.sub("-", text).strip("-")
    return slug or "section"


def _stripped(markdown: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` narrowed past whitespace at both ends."""
    text = markdown[start:end]
    lead = len(text) - len(text.lstrip())
    return start + lead, start + len(text.rstrip()) if text.strip() else start + lead


def parse_page(stem: str, markdown: str) -> list[Section]:
    """Split one page into sections, in page order; each keeps its character offsets
    (``start``, ``end``) into ``markdown``, so ``markdown[start:end] == text``."""
    sections: list[Section] = []
    taken: set[str] = set()
    path: list[tuple[int, str]] = []
    body: list[int] = []  # (start, end) of the open section's body: [first line start, last line end]
    heading: tuple[str, tuple[str, ...]] | None = None  # (slug, path) of open section

    def unique(slug: str) -> str:
        candidate, n = slug, 1
        while candidate in taken:
            n += 1
            candidate = f"{slug}-{n}"
        taken.add(candidate)
        return candidate

    def close() -> None:
        start, end = _stripped(markdown, *body) if body else (0, 0)
        text = markdown[start:end]
        if heading is None and text:
            slug, hpath = unique(slugify(stem)), (stem,)
        elif heading is not None:
            slug, hpath = heading
        else:
            return
        if text:
            sections.append(Section(f"{stem}#{slug}", stem, hpath, text, start, end))

    fence = ""  # the open code fence, closed by the same character at least as long
    offset = 0
    for raw in markdown.split("\n"):
        line_start, offset = offset, offset + len(raw) + 1
        line = raw.removesuffix("\r")
        span = [line_start, line_start + len(raw)]
        opener = FENCE.match(line)
        if opener and not fence:
            fence = opener[1]
        elif opener and opener[1][0] == fence[0] and len(opener[1]) >= len(fence):
            fence = ""
            body[:] = [body[0], span[1]] if body else span
            continue
        match = None if fence else HEADING.match(line)
        if match is None:
            body[:] = [body[0], span[1]] if body else span
            continue
        close()
        level, title = len(match[1]), match[2].strip()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        heading = (unique(slugify(title)), tuple(t for _, t in path))
        body = []
    close()
    return sections


def _page_files(pages_dir: Path) -> list[Path]:
    """``pages/*.md`` files, sorted; a folder that cannot be listed is an error, not empty."""
    try:
        with os.scandir(pages_dir) as entries:
            names = [entry.name for entry in entries]
    except OSError as error:
        raise DatasetError(
            f"{pages_dir}: cannot list the pages ({error.strerror or error}); check the folder's permissions"
        ) from None
    files = sorted(pages_dir / name for name in names if name.endswith(".md"))
    for file in files:
        if file.is_symlink() and not file.is_file():
            warn(f"{file}: {_broken_link(file)}; page skipped: fix the link or remove it")
    return [file for file in files if file.is_file()]  # not a folder named x.md


def _broken_link(file: Path) -> str:
    """Why a page link leads to no file: a loop, nothing, or something not a file."""
    try:
        file.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop"
        if error.errno == errno.ENOENT:
            return f"a link to {os.readlink(file)}, which does not exist"
        return f"a link that cannot be followed ({error.strerror})"
    return f"a link to {os.readlink(file)}, which is not a file"


def read_pages(pages_dir: Path, texts: dict[str, str] | None = None) -> tuple[list[Section], list[Path]]:
    """Sections of every page, and the page files read. Page ids are the file stems in
    NFC (macOS writes names in NFD; labels are typed in NFC). ``texts``, when given,
    receives each page's text by id: the text section and chunk offsets point into."""
    files = _page_files(pages_dir)
    if not files:
        raise DatasetError(
            f"{pages_dir}: no pages found; put one Markdown file per page in pages/*.md"
        )
    sections: list[Section] = []
    for file in files:
        try:
            markdown = file.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as error:
            raise DatasetError(f"{file}: not UTF-8 text ({error.reason}); save it as UTF-8") from None
        except OSError as error:
            raise DatasetError(f"{file}: cannot be read ({error.strerror}); check its permissions") from None
        page = unicodedata.normalize("NFC", file.stem)
        if texts is not None:
            texts[page] = markdown
        sections.extend(parse_page(page, markdown))
    if not sections:
        raise DatasetError(f"{pages_dir}: the pages hold no text under any heading")
    return sections, files


def _pages_dir(cfg) -> tuple[Path, Path]:
    """The dataset folder and its pages/ folder; ``cfg.path`` null means the built-in library."""
    root = Path(cfg.path).expanduser() if cfg.path else LIBRARY
    if not root.is_dir():
        raise DatasetError(
            f"dataset.path={str(root)!r} is not a folder; point it at a folder holding "
            "pages/*.md and questions.jsonl"
        )
    pages_dir = root / "pages"
    if not pages_dir.is_dir():
        raise DatasetError(f"{root}: no pages/ folder; put the Markdown pages in {pages_dir}")
    return root, pages_dir


def load_sections(cfg) -> list[Section]:
    """The sections alone: a folder needs no questions file to be given questions."""
    return read_pages(_pages_dir(cfg)[1])[0]


def load(cfg) -> Dataset:
    """Load a folder dataset; ``cfg.path`` null means the built-in library."""
    root, pages_dir = _pages_dir(cfg)
    questions_file = Path(cfg.questions).expanduser() if cfg.questions else root / "questions.jsonl"
    pages: dict[str, str] = {}
    sections, page_files = read_pages(pages_dir, pages)
    questions = read_questions(questions_file, sections, pages)
    return Dataset(
        name=cfg.name,
        sections=sections,
        questions=questions,
        pages=pages,
        fingerprint=fingerprint([*page_files, questions_file], root),
    )
