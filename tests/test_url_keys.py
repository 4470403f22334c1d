"""A key in any part of a URL is a key (issue 48): the one secret rule
(:func:`receval.core.secrets.looks_like_key`) reads the user-info, the host and port,
every path segment, the query and the fragment, so ``http://host/sk-.../v1`` (as some
APIs take tokens) is refused before anything is written, as ``name=sk-...`` is; a key
pasted as a setting's NAME is refused by the run spec and hidden by export; upper-case
hex is no hash receval writes, so it may be a key."""

from __future__ import annotations

import os

import pytest
from conftest import exit_code

from receval.analysis.tracker import config_params, safe_document
from receval.run.argv import argv_problems
from receval.clients import http
from receval.core.errors import ConfigError
from receval.core.formatting import shown
from receval.core.secrets import looks_like_key, url_secret
from receval.core.trust import config_problems

KEY = "sk-Zq8v3LkR0abcdefGHIJ"
OPAQUE = "Zq8v3LkR0abcdefGHIJKLmnop"  # a key without a known prefix: a random run of letters and digits

# every part of a URL a key can hide in; each is a class of places, not one example
URLS = {
    "path": f"http://api.example/{KEY}/v1",
    "deep path": f"http://api.example/v1/token/{OPAQUE}/chat",
    "percent-encoded path": "http://api.example/%73k-Zq8v3LkR0abcdefGHIJ/v1",
    "path parameter": f"http://api.example/v1;key={OPAQUE}",
    "user-info": f"http://user:{KEY}@api.example/v1",
    "user alone": f"http://{KEY}@api.example/v1",
    "query value": f"http://api.example/v1?q={KEY}",
    "query name": "http://api.example/v1?access_token=abc123",
    "bare query": f"http://api.example/v1?{OPAQUE}",
    "fragment": f"http://api.example/v1#{KEY}",
    "port-adjacent": f"http://api.example:{KEY}/v1",
    "after the port": f"http://api.example:8080{OPAQUE}/v1",
    "host label": f"http://{OPAQUE}.api.example/v1",
}
PLAIN = [
    "http://localhost:11434/v1", "http://127.0.0.1:8089/v1", "https://api.openai.com/v1",
    "http://[::1]:8080/v1", "http://es:9200/my-index/_search", "http://h:9/search?size=10",
    "https://h.example/openai/deployments/gpt-4o-2024-08-06/chat",
    "http://h/v1/models/claude-3-5-sonnet-20241022", f"http://h/blobs/{'a3f' * 20}",  # a lower-case hash
]


@pytest.mark.parametrize("where", URLS)
def test_a_key_in_any_part_of_a_url_is_a_key_to_every_check(where):
    url = URLS[where]
    assert url_secret(url), where
    (problem,) = argv_problems([f"transform.base_url={url}"])
    assert problem.startswith("transform.base_url: a URL with ") and "nothing was written" in problem
    (problem,) = config_problems({"rerank": {"base_url": url}})
    assert problem.startswith("rerank.base_url: a URL with ")
    with pytest.raises(ConfigError) as caught:
        http.api_url(url, "", "transform.base_url", "transform.api_key_env")
    for text in (*caught.value.problems, problem, shown(url, "secret")):
        assert KEY not in text and OPAQUE not in text and "abc123" not in text


@pytest.mark.parametrize("url", PLAIN)
def test_urls_without_a_key_pass_every_check(url):
    assert url_secret(url) is None
    assert argv_problems([f"transform.base_url={url}"]) == []
    assert shown(url, "secret") == url.split("?")[0] + (" (query not shown)" if "?" in url else "")


def test_a_key_in_a_url_path_on_the_command_line_writes_no_file(tmp_path, monkeypatch, capsys):
    """Refused before Hydra starts: no run folder, no ``.hydra/``, no log, and the key in no message."""
    from receval.cli.main import main

    monkeypatch.chdir(tmp_path)
    for url in (URLS["path"], URLS["port-adjacent"], URLS["fragment"]):
        code = exit_code(main, ["transform=hyde", f"transform.base_url={url}", "transform.model=m",
                                f"hydra.run.dir={tmp_path}/run"])
        assert code == 2
        err = capsys.readouterr().err
        assert "a URL with a key" in err and KEY not in err
    assert os.listdir(tmp_path) == []


def test_a_key_as_a_setting_name_is_refused_by_the_spec_and_hidden_by_export():
    config = {"retriever": {"kind": "http", "body": {KEY: 1, "size": 10}}}
    (problem,) = config_problems(config)
    assert problem.startswith("retriever.body holds a setting whose NAME looks like a key") and KEY not in problem
    assert argv_problems([f"+retriever.body.{KEY}=1"]) and KEY not in argv_problems([f"+retriever.body.{KEY}=1"])[0]
    exported = config_params(config)  # a run stored before the rule: export still hides it
    assert exported == {"retriever.kind": "http", "retriever.body.hidden": "1", "retriever.body.size": "10"}
    assert KEY not in repr(safe_document({"config": config}))


def test_upper_case_hex_may_be_a_key_and_lower_case_hex_is_a_hash():
    upper = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B"
    assert looks_like_key(upper) and looks_like_key(upper.lower().replace("9", "G", 1))
    assert not looks_like_key(upper.lower())  # a commit or a content hash as receval writes them
    assert config_params({"dataset": {"name": upper}}) == {"dataset.name": "<hidden: looks like a key>"}
