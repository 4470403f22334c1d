"""One secret rule: :func:`receval.core.secrets.looks_like_key` decides what the run spec
refuses to save and what ``export --to mlflow`` hides, so the two cannot disagree, and a
setting whose name merely contains a credential's letters (``passages``, ``author``) is
an ordinary setting to both."""

from __future__ import annotations

import pytest

from receval.analysis.tracker import config_params, param_value
from receval.core.secrets import looks_like_key, url_secret
from receval.core.trust import config_problems

KEY = "sk-0123456789abcdefghijklmnop"

# (setting name, value, a secret?): names with a credential's letters inside a word, field
# names ending in ``_key``, model names and prompts are not; credential names and key-like
# values are, whatever the other half.
TABLE = [
    ("passages", "ten-per-question", False),
    ("author", "Jane Austen", False),
    ("design", "two-tower", False),
    ("session_notes", "first try", False),
    ("id_key", "doc_id", False),
    ("score_key", "score", False),
    ("max_tokens", "1000", False),
    ("model", "claude-3-5-sonnet-20241022", False),
    ("prompt", "Answer the question: {question}", False),
    ("api_key_env", "MY_KEY", False),
    ("token", "", False),  # empty: nothing to hide
    ("token", "plain-looking", True),
    ("api_key", "x", True),
    ("x-api-key", "x", True),
    ("client_secret", "s", True),
    ("password", "hunter2", True),
    ("key", "abc", True),
    ("sig", "abc123", True),
    ("Authorization", "Bearer abcdefgh", True),
    ("note", KEY, True),
    ("note", "Zq8v3LkR0abcdefGHIJKLmnop", True),
    ("api_key_env", KEY, True),  # a key where a variable NAME belongs
]


@pytest.mark.parametrize(("name", "value", "secret"), TABLE)
def test_the_spec_and_export_agree_because_one_function_decides(name, value, secret):
    refused = bool(config_problems({"retriever": {"kind": "http", "body": {name: value}}}))
    exported = param_value(f"retriever.body.{name}", value)
    assert looks_like_key(value, name) is secret
    assert refused is secret
    assert (exported != value) is secret
    if secret:
        assert exported.startswith("<hidden") and value not in exported.replace("<hidden", "")


def test_settings_named_passages_or_author_are_shown_to_the_tracker():
    config = {"dataset": {"passages": "all", "author": "Jane Austen"}, "retriever": {"design": "two-tower",
                                                                                  "token": "plain-looking"}}
    assert config_params(config) == {"dataset.passages": "all", "dataset.author": "Jane Austen",
                                     "retriever.design": "two-tower", "retriever.token": "<hidden>"}


def test_a_url_query_is_read_by_the_same_rule():
    assert url_secret("http://h:9/search?passage=1&author=austen&design=x") is None
    for url in ("http://h:9/search?size=10&sig=abc123", "http://h:9/search?token=abc123",
                f"http://h:9/search?q={KEY}", "https://h/v1?X-Amz-Signature=abc", "https://h/v1?key=abc"):
        assert url_secret(url) == "a key in its query string (?api_key=...)", url
