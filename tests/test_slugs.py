"""Tests for the slug rule and page parsing of receval.datasets.folder
(``slugify``, ``parse_page``)."""

from __future__ import annotations

import re

import pytest

from receval.datasets import Section
from receval.datasets.folder import parse_page, slugify

FENCE = "`" * 3


@pytest.mark.parametrize(
    "heading, slug",
    [
        ("Children's cards", "childrens-cards"),
        ("Children\u2019s cards", "childrens-cards"),  # curly apostrophe
        ("Late returns", "late-returns"),
        ("Fees, fines & charges!!", "fees-fines-charges"),  # punctuation runs -> one "-"
        ("  --Opening -- hours--  ", "opening-hours"),  # "-" stripped at both ends
        ("Ages 5\u201311", "ages-5-11"),  # en dash
        ("Wi-Fi 2024", "wi-fi-2024"),
        ("Under_score", "under-score"),  # "_" is not a letter or digit
        ("Café opening", "café-opening"),  # unicode letters kept
        ("ÜBER Straße", "über-straße"),
        ("東京 branch", "東京-branch"),
        ("", "section"),
        ("!!!", "section"),
        ("'", "section"),
    ],
)
def test_slugify(heading, slug):
    assert slugify(heading) == slug


@pytest.mark.parametrize(
    "heading",
    ["Children's cards", "Fees, fines & charges!!", "  --a--b--  ", "Café opening", "", "x_y z", "Q&A: 2024/25"],
)
def test_slug_shape_and_idempotence(heading):
    slug = slugify(heading)
    assert slugify(slug) == slug
    assert slug == "section" or re.fullmatch(r"[^\W_]+(?:-[^\W_]+)*", slug)
    assert slug == slug.lower()


def ids(sections: list[Section]) -> list[str]:
    return [s.id for s in sections]


def test_ids_heading_paths_and_text():
    page = "\n".join(
        [
            "# Fines",
            "We charge fines.",
            "## Late returns",
            "Ten pence a day.",
            "",
            "Capped at two pounds.",
            "### Children",
            "No fines for children.",
            "## Lost items",
            "Pay the price.",
            "# Other",
            "Anything else.",
        ]
    )
    sections = parse_page("fines", page)
    assert ids(sections) == [
        "fines#fines", "fines#late-returns", "fines#children", "fines#lost-items", "fines#other",
    ]
    assert [s.heading_path for s in sections] == [
        ("Fines",),
        ("Fines", "Late returns"),
        ("Fines", "Late returns", "Children"),
        ("Fines", "Lost items"),
        ("Other",),
    ]
    assert sections[1].text == "Ten pence a day.\n\nCapped at two pounds."
    assert sections[2].heading == "Fines > Late returns > Children"
    assert all(s.page == "fines" for s in sections)


def test_skipped_levels_and_closing_hashes():
    sections = parse_page("p", "# A\n### B ###\nb text\n## C\nc text\n")
    assert [(s.id, s.heading_path) for s in sections] == [
        ("p#b", ("A", "B")),
        ("p#c", ("A", "C")),
    ]


def test_heading_without_text_is_not_a_section():
    page = "# Fines\n\n   \n## Late returns\nTen pence.\n## Empty\n\n# Last\n"
    sections = parse_page("fines", page)
    assert ids(sections) == ["fines#late-returns"]
    assert sections[0].heading_path == ("Fines", "Late returns")


def test_text_before_first_heading_is_headed_by_the_stem():
    sections = parse_page("opening-hours", "Open every day.\n\n# Weekdays\n9 to 5.\n")
    assert [(s.id, s.heading_path, s.text) for s in sections] == [
        ("opening-hours#opening-hours", ("opening-hours",), "Open every day."),
        ("opening-hours#weekdays", ("Weekdays",), "9 to 5."),
    ]
    assert sections[0].heading == "opening-hours"


def test_stem_slug_taken_by_preamble_pushes_heading_to_dash_2():
    sections = parse_page("fines", "Intro.\n# Fines\nx\n")
    assert ids(sections) == ["fines#fines", "fines#fines-2"]


def test_blank_preamble_takes_no_slug():
    assert ids(parse_page("fines", "\n  \n# Fines\nx\n")) == ["fines#fines"]


def test_hash_lines_inside_fences_are_text():
    page = "\n".join(
        ["# Code", "Example:", FENCE + "python", "# not a heading", "## nor this", FENCE, "after",
         "~~~", "# tilde fence", "~~~", "# Next", "n"]
    )
    sections = parse_page("p", page)
    assert ids(sections) == ["p#code", "p#next"]
    assert "# not a heading\n## nor this" in sections[0].text
    assert "# tilde fence" in sections[0].text
    assert sections[0].text.endswith("~~~")


def test_lines_that_are_not_headings():
    sections = parse_page("p", "# Tags\n#hashtag\n####### seven\nplain\n")
    assert ids(sections) == ["p#tags"]
    assert sections[0].text == "#hashtag\n####### seven\nplain"


def test_duplicate_headings_get_numbers_and_skip_taken_ids():
    page = "# Fees\na\n# Fees\nb\n# Fees 2\nc\n# Fees\nd\n"
    sections = parse_page("p", page)
    assert ids(sections) == ["p#fees", "p#fees-2", "p#fees-2-2", "p#fees-3"]
    assert [s.text for s in sections] == ["a", "b", "c", "d"]


def test_duplicate_numbering_counts_headings_without_text():
    """Numbering is by heading, in page order: an empty "Fees" still takes ``fees``."""
    sections = parse_page("p", "# Fees\n## Fees\nb\n")
    assert [(s.id, s.heading_path) for s in sections] == [("p#fees-2", ("Fees", "Fees"))]


def test_slugs_are_per_page():
    assert ids(parse_page("a", "# Fees\nx")) == ["a#fees"]
    assert ids(parse_page("b", "# Fees\nx")) == ["b#fees"]


def test_ids_unique_on_a_page_of_many_repeats():
    titles = ["Fees", "Fees 2", "Fees", "fees", "FEES!", "Fees 3", "Fees-2", "Fees"]
    page = "".join(f"# {t}\ntext {i}\n" for i, t in enumerate(titles))
    sections = parse_page("p", page)
    assert len(sections) == len(titles)
    assert len(set(ids(sections))) == len(titles)
    assert ids(sections) == [
        "p#fees", "p#fees-2", "p#fees-3", "p#fees-4", "p#fees-5", "p#fees-3-2", "p#fees-2-2", "p#fees-6",
    ]


# --------------------------------------------------------------------------- Markdown edge cases
# The module parses "Markdown headings" and "fenced code blocks"; these follow CommonMark.


def test_closing_sequence_needs_a_space_before_it():
    """CommonMark: "## Learn C#" is the heading "Learn C#" (a closing run of # must be
    preceded by a space); "## Learn C #" is "Learn C"."""
    sections = parse_page("p", "## Learn C#\nx\n## Learn F ##\ny\n")
    assert [s.heading_path for s in sections] == [("Learn C#",), ("Learn F",)]
    assert ids(sections) == ["p#learn-c", "p#learn-f"]


@pytest.mark.parametrize(
    "opening, inner, closing",
    [
        (FENCE, "~~~", FENCE),  # a fence closes only with the same character
        ("`" * 4, FENCE, "`" * 4),  # ... and a run at least as long as the opening one
    ],
)
def test_fence_closed_only_by_a_matching_fence(opening, inner, closing):
    page = "\n".join(["# Code", opening, inner, "# still code", closing, "# Next", "n"])
    sections = parse_page("p", page)
    assert ids(sections) == ["p#code", "p#next"]
    assert "# still code" in sections[0].text


def test_decomposed_and_precomposed_headings_share_a_slug():
    import unicodedata

    heading = "Café opening"
    assert slugify(unicodedata.normalize("NFD", heading)) == slugify(heading) == "café-opening"
