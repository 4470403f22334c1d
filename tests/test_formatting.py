"""One value formatter (receval.core.formatting.shown): a text, a label's setting and a
value that may be a key, each cut to its own limit by the one rule."""

from __future__ import annotations

from receval.core.formatting import LABEL_CHARS, TEXT_CHARS, shown
from receval.core.secrets import SHOWN


def test_each_kind_is_cut_to_its_limit_with_its_mark():
    long = "word " * 200
    assert shown(long) == long[: TEXT_CHARS - 1] + "…" and len(shown(long)) == TEXT_CHARS
    assert shown(long, "label") == long[: LABEL_CHARS - 1] + "…"
    assert shown(long, "secret") == repr(long)[: SHOWN - 3] + "..." and len(shown(long, "secret")) == SHOWN
    assert shown(long, limit=10) == "word word…"
    assert shown("short") == "short" and shown(None) == ""


def test_a_key_is_never_shown_whatever_the_kind_of_display():
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    assert shown(key, "secret") == "<hidden: looks like a key>"
    assert shown(f"https://{key}.example.org/v1?token=x", "secret") == "https://<hidden>/v1 (query not shown)"
    assert shown(f"https://user:{key}@example.org/v1", "label") == "example.org"
