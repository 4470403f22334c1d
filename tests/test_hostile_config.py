"""Hostile config values (issue 36, step 7), each refused in one message naming the key
and the fix: a bool where a count belongs, a prompt with a placeholder no transform
fills, a SPLADE checkpoint without a masked-LM head."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from receval.run.config import config_dir
from receval.core.errors import ConfigError, RecevalError
from receval.run.spec import run_spec


def compose_with(*overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("config", overrides=list(overrides))


# ----------------------------------------------------------------- a bool is never a number


@pytest.mark.parametrize("key", ["bootstrap.n_resamples", "bootstrap.seed", "depth"])
def test_a_bool_where_a_count_belongs_is_refused_by_hydra_and_by_the_spec(key):
    with pytest.raises(Exception, match=f"Error merging override {key}=true"):  # Hydra's typed merge
        compose_with(f"{key}=true")
    untyped = OmegaConf.create(OmegaConf.to_container(compose_with()))  # a config that escaped the schema's types
    OmegaConf.update(untyped, key, True)
    with pytest.raises(ConfigError, match=rf"{key}=True: not a number; use an integer in \["):
        run_spec(untyped)


@pytest.mark.parametrize(
    "saved, says",
    [
        ({"n_resamples": True}, "bootstrap n_resamples=True: use an integer >= 1"),
        ({"seed": False}, "bootstrap seed=False: use an integer >= 0"),
        ({"level": True}, "bootstrap level=True: use a value between 0 and 1"),
    ],
)
def test_a_stored_runs_bool_bootstrap_setting_is_refused_when_read(saved, says):
    from receval.analysis.settings import bootstrap_settings

    run = SimpleNamespace(config={"bootstrap": saved}, run_dir="runs/a")
    with pytest.raises(RecevalError, match=says):
        bootstrap_settings([run])
    with pytest.raises(RecevalError, match="n_resamples=True"):
        bootstrap_settings([SimpleNamespace(config={}, run_dir="runs/b")], n_resamples=True)


# ----------------------------------------------------------------- a prompt's placeholders

LLM = ("transform.base_url=http://127.0.0.1:9/v1", "transform.model=m")


@pytest.mark.parametrize(
    "transform, prompt, says",
    [
        ("hyde", "Answer {question} about {foo}", r"transform\.prompt holds \{foo\}, which is no placeholder a request "
                                                  r"fills: the placeholders are \{question\}; write a literal brace as"),
        ("multi_query", "{n} rewrites of {question} in {lang}", r"transform\.prompt holds \{lang\}.*the placeholders "
                                                                r"are \{question\}, \{n\}"),
        ("hyde", "{question.__class__}", r"transform\.prompt holds \{question\.__class__\}"),
        ("hyde", "{question!r} and {}", r"transform\.prompt holds \{question!r\}"),
        ("hyde", "{question} {", r"transform\.prompt cannot be filled in \(Single '\{' encountered"),
        ("hyde", "no placeholder", r"transform\.prompt must hold \{question\}"),
    ],
)
def test_a_prompt_with_a_placeholder_no_request_fills_is_refused(transform, prompt, says):
    cfg = compose_with(f"transform={transform}", *LLM, f"transform.prompt='{prompt}'")
    with pytest.raises(ConfigError, match=says):
        run_spec(cfg)


def test_a_prompt_with_literal_braces_and_its_placeholders_passes():
    cfg = compose_with("transform=multi_query", *LLM, "transform.prompt='{n} rewrites of {question} as {{\"queries\": []}}'")
    assert run_spec(cfg).config.transform.prompt.startswith("{n} rewrites")


# ----------------------------------------------------------------- SPLADE needs a masked-LM head


def test_splade_refuses_a_checkpoint_whose_config_names_no_masked_lm_head(tmp_path):
    """Read from config.json at spec time, before torch is imported: nothing is loaded."""
    import json

    folder = tmp_path / "bare-bert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    cfg = compose_with("retriever=splade", f"retriever.model={folder}")
    with pytest.raises(ConfigError, match=rf"retriever\.model='{folder}': {folder} holds a BertModel checkpoint "
                                          r"\(config.json architectures\), which has no masked-LM head; SPLADE needs a "
                                          r"masked-LM checkpoint"):
        run_spec(cfg)


def tiny_bert(folder, head: bool) -> None:
    """A one-layer BERT with a 9-word vocabulary, with or without its masked-LM head."""
    pytest.importorskip("torch")
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cache", "pip", "k1", "bm25"]))
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(vocab_size=9, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    (BertForMaskedLM if head else BertModel)(config).save_pretrained(folder)


@pytest.mark.slow  # imports torch
def test_splade_refuses_a_checkpoint_without_the_heads_weights(tmp_path):
    """A config.json that claims a masked-LM (or names no architecture) over a bare encoder's
    weights: transformers would fill the head with random numbers; the load refuses it."""
    import json

    from receval.retrievers.splade import Splade, model_folder

    tiny_bert(tmp_path / "with-head", head=True)
    Splade(model_folder(str(tmp_path / "with-head")), 2, 16, None).load()  # a masked-LM loads
    folder = tmp_path / "claims-a-head"
    tiny_bert(folder, head=False)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    splade = Splade(model_folder(str(folder)), 2, 16, None)
    with pytest.raises(ConfigError, match=r"the checkpoint lacks \d+ weights of the masked-LM head \(cls\.predictions"):
        splade.load()
    assert splade.model is None
