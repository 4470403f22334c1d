"""What a run writes for the read side, and a saved config made runnable again: the run
side's half of :mod:`receval.results.labels` and :mod:`receval.results.configs`, the part
that needs receval's schemas (OmegaConf, :mod:`receval.run.components`).

- :func:`as_written`, :func:`resolved`: the run's config as run.json saves it and as its
  identity hashes it; :func:`written_facts`: what else run.json says of it (label, filled,
  measures);
- :func:`schema_defaults`: receval's config schema flat;
- :func:`label_facts`: run.json's ``label``: each component's text as its schema's
  ``describe`` words it (``rrf(bm25+dense)``, ``dense@30``) and the component nodes as
  their kinds' schemas fill them (a fused retriever's ``{kind: dense}`` member with
  dense's defaults), so naming and ``compare`` read them instead of the schemas;
- :func:`config_fills`: run.json's ``filled``: what those schemas fill in that the saved
  config leaves out, so the config is stored once and the read side derives the flat
  params and the filled nodes (:func:`receval.results.record.derived_facts`);
- :func:`filled`: one node as its kind's schema fills it;
- :func:`own_default`, :func:`saved_config`: ``reproduce``'s typed config (and
  ``select --out``'s fallback for settings that do not change results).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from receval.run import components
from receval.run import config as config_schema
from receval.run.config import DENSE_BACKEND, default_dense_backend
from receval.run.spec import plain
from receval.core import trust
from receval.core.errors import ConfigError, RunError
from receval.core.secrets import without_urls
from receval.results.configs import jsonable, runnable_config
from receval.results.identity import is_result_key
from receval.results.labels import GROUPS, are_members, parts
from receval.results.record import flatten, leaves, node_keys

_DEFAULTS: dict[str, Any] | None = None


def schema_defaults() -> dict[str, Any]:
    """Flattened defaults of receval's config schema (``???`` for required values)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        schema = OmegaConf.structured(config_schema.RecevalConfig)
        _DEFAULTS = flatten(OmegaConf.to_container(schema, resolve=False))
    return dict(_DEFAULTS)


# ------------------------------------------------------------------ the config a run saves

def resolved(cfg) -> dict:
    """The run config as plain data, interpolations resolved, Hydra's node left out."""
    return plain(cfg, resolve=True)


#: Keys of the ``dataset`` node saved resolved: where the data files were read, so a
#: stored run can be re-run and pooled without evaluating anything (a path, never a secret).
DATASET_PATHS = ("path", "questions")


def as_written(cfg) -> dict:
    """The run config as plain data with every interpolation as written, Hydra's node
    left out: what run.json saves, so a value passed as ``${oc.env:NAME}`` is stored as
    that text, as Hydra stores it in ``.hydra/``, never as the secret it resolves to
    (the identity hash is of :func:`resolved`). The dataset's file paths
    (:data:`DATASET_PATHS`, e.g. a suite's ``${oc.env:RECEVAL_SHARED,../shared}/...``)
    are saved as the paths this run read (an existing file or folder; anything else, as written)."""
    data = chosen_backends(plain(cfg, resolve=False))
    dataset = data.get("dataset")
    if isinstance(dataset, dict):
        for key in DATASET_PATHS:
            if trust.is_interpolation(dataset.get(key)):
                value = OmegaConf.select(cfg, f"dataset.{key}", throw_on_missing=False)
                if isinstance(value, str) and Path(value).exists():  # a path it read, never a secret
                    dataset[key] = value
    return data


def chosen_backends(node):
    """``node`` with every dense backend left to the default (:data:`receval.run.config.DENSE_BACKEND`)
    saved as the backend it chose here: which vectors a run's numbers come from is part of
    the run (its identity hashes the resolved config), never a choice a re-run makes anew."""
    if isinstance(node, dict):
        return {key: chosen_backends(value) for key, value in node.items()}
    if isinstance(node, list):
        return [chosen_backends(value) for value in node]
    return default_dense_backend() if node == DENSE_BACKEND else node


def written_facts(cfg, measure_names: list[str]) -> dict:
    """What readers need from a run without the run side (:func:`receval.results.door.open_run`):
    ``label`` (what the run is and its chunking, as :mod:`receval.results.labels` words it),
    ``filled`` (what the schemas fill in that the saved config leaves out: readers derive
    the config flat and the label's filled nodes from the config, stored once, and these,
    :attr:`receval.results.record.Run.facts`) and ``measures`` (each stored measure's
    label and direction)."""
    from receval.scoring.declared import lower_is_better, measure_label

    saved = as_written(cfg)
    label = label_facts(resolved(cfg), saved)
    filled = config_fills(saved, label.pop("nodes"))
    measures = {name: {"label": measure_label(name), "lower_is_better": lower_is_better(name)}
                for name in measure_names}
    return {"label": label, "filled": filled, "measures": measures}


# ------------------------------------------------------------------ components

_SEEN: dict[tuple[str, str, str], Any] = {}  # (what, group, node as JSON) -> result: sweeps repeat nodes


def _once(what: str, group: str, node: Any, make) -> Any:
    key = (what, group, json.dumps(node, sort_keys=True, default=str))
    if key not in _SEEN:
        _SEEN[key] = make()
    return copy.deepcopy(_SEEN[key])


def component_text(group: str, node: Any) -> str:
    """A component as it reads: its schema's ``describe`` or its kind; ``none`` when the
    run has none; a URL as its host."""
    if node is None:
        return "none"
    if isinstance(node, str):
        return node

    def described() -> str:
        try:
            return components.label(group, node)
        except Exception:  # noqa: BLE001 - an older or unknown kind is named by its kind
            return str(node.get("kind", node.get("name", "?"))) if isinstance(node, dict) else "?"

    return _once("label", group, node, lambda: without_urls(described()))


def filled(group: str, node: Any) -> Any:
    """A member as its kind's schema fills it (``{kind: dense}`` gets ``backend: local``),
    so a default left out and the same value written out are no difference; as saved
    when its kind is unknown."""
    if isinstance(node, str):
        node = {"kind": node}
    if not isinstance(node, dict) or "kind" not in node:
        return node
    defaults = _once("defaults", group, str(node["kind"]), lambda: _defaults(group, str(node["kind"])))
    return _merged(defaults, node) if defaults is not None else node


def _defaults(group: str, kind: str) -> dict | None:
    """The schema of ``kind`` in ``group`` as plain data (None for a kind not known here)."""
    try:
        schema = components.entry(group, kind, group).schema
        return OmegaConf.to_container(OmegaConf.structured(schema), resolve=False, enum_to_str=True)
    except Exception:  # noqa: BLE001 - an older or unknown kind
        return None


def _merged(base: dict, node: dict) -> dict:
    out = dict(base)
    for key, value in node.items():
        out[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


def filled_members(group: str, node: Any) -> Any:
    """``node`` with every member list (``retriever.members``) filled by :func:`filled`, at any depth."""
    if not isinstance(node, dict):
        return node
    return {key: [filled_members(group, filled(group, v)) for v in value] if are_members(key, value)
            else filled_members(group, value) for key, value in node.items()}


def label_facts(config: dict, saved: dict | None = None) -> dict:
    """run.json's ``label`` for a run of ``config`` (plain data, resolved): ``what`` and
    ``chunking`` (the line a run prints), ``components`` (group -> its text) and ``nodes``
    (group -> its node as ``saved`` holds it, interpolations as written so no resolved
    value such as ``${oc.env:TOKEN}``'s reaches disk, it and its members filled)."""
    config = config if isinstance(config, dict) else {}
    saved = saved if isinstance(saved, dict) else config
    present = [g for g in GROUPS if isinstance(config.get(g), dict | str)]
    texts = {g: component_text(g, config[g]) for g in present}
    what, chunks = parts(config, None, texts)
    nodes = {g: filled_members(g, filled(g, saved[g])) for g in present if isinstance(saved.get(g), dict | str)}
    return {"what": what, "chunking": chunks, "components": texts, "nodes": nodes}


def config_fills(saved: dict, nodes: dict) -> dict:
    """run.json's ``filled`` for a run whose config is saved as ``saved`` (as written):
    dotted key -> value of each schema default the config has no key for (:func:`schema_defaults`,
    a node the config fills being no key), and of each component node (``nodes``: the
    label's, :func:`label_facts`) wherever its kind's schema fills or writes out what
    ``saved`` leaves out or writes short (a fused retriever's members, whole)."""
    flat = flatten(saved)
    fills = {k: list(v) if isinstance(v, tuple) else v for k, v in schema_defaults().items()
             if k not in flat and k not in node_keys(flat)}
    written = leaves({group: saved[group] for group in nodes if group in saved})
    fills.update({k: v for k, v in leaves(nodes).items() if k not in written or written[k] != v})
    return fills


# ------------------------------------------------------------------ a saved config re-run

_OWN: dict | None = None


def own_default(path: tuple):
    """For a setting that does not change results (:data:`receval.results.identity.NON_RESULT_KEYS`:
    ``cache_dir``, ...) saved as an interpolation: what receval's own ``conf/config.yaml``
    sets there, else its schema's default (:data:`receval.core.trust.ABSENT` for a result
    setting, which is refused instead). Evaluates receval's own file, never the run's."""
    global _OWN
    if not path or not all(isinstance(part, str) for part in path) or is_result_key(".".join(path)):
        return trust.ABSENT
    if _OWN is None:
        own = yaml.safe_load((Path(config_schema.config_dir()) / "config.yaml").read_text(encoding="utf-8"))
        own = {k: v for k, v in own.items() if k not in ("defaults", "hydra")}
        _OWN = {**schema_defaults(), **flatten(OmegaConf.to_container(OmegaConf.create(own), resolve=True))}
    value = _OWN.get(".".join(path), trust.ABSENT)
    return trust.ABSENT if value == "???" else jsonable(value)


def saved_config(run_dir: Path, *, allow_remote: bool = False, allow_code: bool = False):
    """:func:`receval.results.configs.runnable_config` (settings that do not change results
    by :func:`own_default`) merged onto receval's schema (a key this receval no longer
    knows is an error): what ``reproduce`` re-runs."""
    from omegaconf.errors import OmegaConfBaseException

    data = runnable_config(run_dir, allow_remote=allow_remote, allow_code=allow_code, fallback=own_default)
    try:
        return config_schema.structured_run(data)
    except ConfigError as error:  # a group's own schema refused a key or kind
        raise RunError([f"{run_dir}: its saved config is not valid in this receval: {p}"
                        for p in error.problems]) from None
    except OmegaConfBaseException as error:
        message = str(error).splitlines()[0]
        raise RunError(f"{run_dir}: its saved config does not fit this receval ({message})") from None
