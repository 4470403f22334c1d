"""The run spec (receval/run/spec.py): a composed run config is validated once, in one place,
and what is refused there leaves nothing on disk."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from receval import schema

from receval.run import spec
from receval.run.config import config_dir
from receval.core.errors import ConfigError


@pytest.fixture
def command(tmp_path, monkeypatch):
    """``receval ARGS`` in this process (Hydra's own logging set-up left out, as
    tests/test_schema.py does); returns (exit status, the run folder)."""
    from hydra.core.global_hydra import GlobalHydra

    import hydra._internal.core_plugins.basic_launcher as launcher
    import hydra._internal.hydra as hydra_app
    import hydra.core.utils as hydra_utils
    from hydra.core.plugins import Plugins

    Plugins.instance()
    for module in (launcher, hydra_app, hydra_utils):
        monkeypatch.setattr(module, "configure_log", lambda *args, **kwargs: None)
    monkeypatch.chdir(tmp_path)

    def run(*overrides: str, options: tuple[str, ...] = ()):
        from receval.cli.run import main

        folder = tmp_path / "out"
        where = "hydra.sweep.dir" if "-m" in options else "hydra.run.dir"
        monkeypatch.setattr(sys, "argv", ["receval", *options, f"{where}={folder}", *overrides])
        GlobalHydra.instance().clear()
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
        finally:
            GlobalHydra.instance().clear()
        return code, folder

    return run


@pytest.fixture
def counted(monkeypatch):
    """Counts the spec validations and each key's range checks (schema.out_of_range is the
    one function every range check ends in)."""
    counts = {"validations": 0, "keys": Counter()}
    real_validate, real_range = spec.validate, schema.out_of_range

    def validate(*args, **kwargs):
        counts["validations"] += 1
        return real_validate(*args, **kwargs)

    def out_of_range(key, *args, **kwargs):
        counts["keys"][key] += 1
        return real_range(key, *args, **kwargs)

    monkeypatch.setattr(spec, "validate", validate)
    monkeypatch.setattr(schema, "out_of_range", out_of_range)
    monkeypatch.setattr(spec, "_SPECS", type(spec._SPECS)())
    return counts


def test_one_run_is_validated_once_and_each_number_range_checked_once(command, counted, capsys):
    code, folder = command("retriever=bm25", "retriever.k1=0.9", "chunking.max_words=40")
    assert code == 0, capsys.readouterr().err
    assert (folder / "run.json").is_file()
    assert counted["validations"] == 1
    assert counted["keys"]["retriever.k1"] == 1
    twice = {key: n for key, n in counted["keys"].items() if n > 1}
    assert twice == {}


@pytest.mark.slow
def test_a_sweep_validates_each_job_once(command, counted, capsys):
    """receval's sweeper checks every job before the first runs; each job then reuses its spec."""
    code, folder = command("retriever=bm25", "retriever.k1=0.9,1.5", "chunking.max_words=40", options=("-m",))
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir() if (p / "run.json").is_file()) == ["0", "1"]
    assert counted["validations"] == 2
    assert counted["keys"]["retriever.k1"] == 2  # 0.9 once, 1.5 once


def test_the_callbacks_check_and_the_run_share_one_frozen_spec(counted):
    from omegaconf.errors import ReadonlyConfigError

    from receval.run.pipeline import check_config

    cfg = compose_with("retriever=bm25", "retriever.k1=0.9", "+cost.bm25.per_1k_requests=2")
    check_config(cfg)  # the callback's (and the sweeper's) check
    found = spec.run_spec(cfg)  # what run_one and pipeline.run ask for
    assert counted["validations"] == 1 and spec.run_spec(compose_with("retriever=bm25", "retriever.k1=0.9",
                                                                      "+cost.bm25.per_1k_requests=2")) is found
    assert counted["validations"] == 1 and counted["keys"]["retriever.k1"] == 1
    assert found.stage_names == ("bm25", "select") and found.prices["bm25"]["per_1k_requests"] == 2.0
    with pytest.raises(ReadonlyConfigError):
        found.config.retriever.k1 = 2.0
    assert spec.run_spec(compose_with("retriever=bm25", "retriever.k1=1.0")) is not found  # another config
    assert counted["validations"] == 2


# ----------------------------------------------------------------- secrets: refused at spec time

KEY = "sk-live-Zq8v3LkR0abcdefGHIJ"


def compose_with(*overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    "override, where",
    [
        (f"+retriever.body.token={KEY}", "retriever.body.token"),  # under a credential's name
        ("+retriever.body.token=plain-words-but-a-token", "retriever.body.token"),
        ("+retriever.body={Authorization: 'Bearer abc123secretvalue'}", "retriever.body.Authorization"),
        ("+retriever.params.q=Zq8v3LkR0abcdefGHIJKLmnop", "retriever.params.q"),  # a random run, any name
        (f"+dataset.extra={{nested: [{KEY}]}}", "dataset.extra.nested[0]"),
    ],
)
def test_a_key_like_value_anywhere_is_refused_by_the_spec_naming_the_key_not_the_value(override, where):
    cfg = compose_with(override)
    with pytest.raises(ConfigError, match=rf"^{re.escape(where)} holds what looks like a key") as caught:
        spec.run_spec(cfg)
    (problem,) = caught.value.problems
    assert "api_key_env" in problem and "${oc.env:VAR}" in problem and "nothing was written" in problem
    assert KEY not in str(caught.value) and "abc123secretvalue" not in str(caught.value)
    assert "Zq8v3LkR0" not in str(caught.value) and "plain-words" not in str(caught.value)


def test_names_paths_models_and_interpolations_are_not_keys(monkeypatch):
    from receval.core.secrets import looks_like_key

    for value in ("claude-3-5-sonnet-20241022", "BAAI/bge-small-en-v1.5", "OPENAI_API_KEY", "/data/beir/scifact",
                  "0123456789abcdef0123456789abcdef01234567", "Answer the question: {question}", "20261203070220"):
        assert not looks_like_key(value), value
    assert not looks_like_key("1000", "max_tokens") and not looks_like_key("ES_KEY", "api_key_env")
    for value in (KEY, "Bearer abcdefgh", "ghp_x", "Zq8v3LkR0abcdefGHIJKLmnop"):
        assert looks_like_key(value), value
    assert looks_like_key("hunter2", "password") and looks_like_key("x", "x-api-key")
    monkeypatch.setenv("MY_TOKEN", KEY)
    cfg = compose_with("retriever=http", "retriever.url=http://127.0.0.1:9/search",
                       "retriever.body={token: '${oc.env:MY_TOKEN}'}")  # how a secret should come
    found = spec.run_spec(cfg)
    assert found.written["retriever"]["body"]["token"] == "${oc.env:MY_TOKEN}"
    assert found.resolved["retriever"]["body"]["token"] == KEY


@pytest.mark.parametrize("override", [f"+retriever.body.token={KEY}", f"+retriever.params={{api_key: {KEY}}}"])
def test_a_key_on_the_command_line_writes_nothing(command, capsys, override, tmp_path):
    code, folder = command(override)
    err = capsys.readouterr().err
    assert code == 2 and err.count("receval: error:") == 1 and "looks like a key" in err
    assert KEY not in err
    assert not folder.exists() and files_holding(tmp_path, KEY) == []  # no run folder, no .hydra/


def test_a_key_in_a_config_file_is_refused_by_the_spec_before_hydra_writes(command, capsys, tmp_path):
    """Not on the command line (that is refused before Hydra starts): in a config file,
    reaching the run spec, which the run's callback builds before the run folder is made."""
    extra = tmp_path / "extra" / "experiment"
    extra.mkdir(parents=True)
    (extra / "leaky.yaml").write_text(f"# @package _global_\nretriever:\n  body:\n    token: {KEY}\n")
    code, folder = command("retriever=http", "retriever.url=http://127.0.0.1:9/search", "+experiment=leaky",
                           options=("--config-dir", str(tmp_path / "extra")))
    err = capsys.readouterr().err
    assert code == 2 and err.count("receval: error:") == 1
    assert "retriever.body.token holds what looks like a key" in err and KEY not in err
    assert not folder.exists()
    assert [p for p in files_holding(tmp_path, KEY) if "extra" not in p.parts] == []
