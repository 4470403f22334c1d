"""Components of one run share an object (an index, an encoder) only when every field of
the schema that decides it is equal: the key comes from the schema's fields
(:func:`receval.run.components.shared_key`), never built by hand, so a field added later
can never make two different configs share one object."""

from __future__ import annotations

import enum
import typing
from dataclasses import MISSING, dataclass, fields

import pytest
from omegaconf import OmegaConf

from receval.run import components
from receval.retrievers.dense import EncoderChoice, EncoderFields


def schemas() -> list[type]:
    components.discover()
    return [EncoderFields, EncoderChoice, *(entry.schema for entry in components._REGISTRY.values())]


def default(field):
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return None


def another(field, value):
    """A value of ``field``'s type that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, enum.Enum):
        return next(member for member in type(value) if member != value)
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, list):
        return [*value, "other"]
    if isinstance(value, dict):
        return {**value, "other": 1}
    return "other"  # None: any value differs


@pytest.mark.parametrize("schema", schemas(), ids=lambda s: s.__name__)
def test_configs_differing_in_any_field_get_different_keys(schema):
    base = {f.name: default(f) for f in fields(schema)}
    key = components.shared_key(schema, base)
    assert key == components.shared_key(schema, dict(base))  # equal configs share
    for field in fields(schema):
        changed = {**base, field.name: another(field, base[field.name])}
        assert components.shared_key(schema, changed) != key, f"{schema.__name__}.{field.name} is not in the key"


def test_a_typed_config_node_gives_the_same_key_as_its_values():
    from receval.retrievers.bm25 import BM25Config

    node = OmegaConf.merge(OmegaConf.structured(BM25Config), {"k1": 0.9})
    assert components.shared_key(BM25Config, node) == components.shared_key(BM25Config, {"kind": "bm25", "k1": 0.9, "b": 0.75})
    nested = OmegaConf.create({"kind": "x", "weights": [1, 2], "opts": {"a": 1}})
    assert components.shared_key(Nested, nested) == components.shared_key(Nested, {"kind": "x", "weights": [1, 2], "opts": {"a": 1}})


@dataclass
class Nested:
    kind: str = "x"
    weights: typing.Any = None
    opts: typing.Any = None


@dataclass
class Twin:  # Nested's fields under another schema
    kind: str = "x"
    weights: typing.Any = None
    opts: typing.Any = None


def test_different_schemas_never_share_and_missing_fields_are_refused():
    from receval.retrievers.bm25 import BM25Config

    values = {"kind": "x", "weights": None, "opts": None}
    assert components.shared_key(Nested, values) != components.shared_key(Twin, values)
    with pytest.raises(TypeError, match="BM25Config.k1"):
        components.shared_key(BM25Config, OmegaConf.create({"kind": "bm25", "b": 0.5}))


def test_stages_with_equal_fields_share_one_object_and_others_do_not():
    """A hybrid's two equal BM25 members are one index; a different k1 is another; a dense
    retriever and a dense re-ranker with one model share the encoder object."""
    from receval.retrievers.text import Tokenizer

    context = components.Context(tokenizer=Tokenizer())
    one = components.build("retriever", {"kind": "bm25"}, context)
    same = components.build("retriever", {"kind": "bm25", "k1": 1.2}, context)
    other = components.build("retriever", {"kind": "bm25", "k1": 1.5}, context)
    assert one is same and one is not other
    assert components.build("retriever", {"kind": "tfidf"}, context) is not one
