"""A run's identity: what its results depend on, and nothing else.

Two runs with the same identity hash hold the same per-question results (timings
aside), so resume skips a finished job with the same hash and the report does not
list settings outside the identity as differences. Settings that only change where
things are cached, how questions are batched or how often they are timed, or how the
report computes its intervals afterwards are :data:`NON_RESULT_KEYS`; the dataset's content enters
through its fingerprint, compared beside the hash.
"""

from __future__ import annotations

from collections.abc import Sequence

from receval.results.format import config_hash

# Dotted config keys (a key names its whole subtree) that do not change a run's results:
# what the run is called, where caches live, how questions are batched and timed, the
# report's intervals, and what a run returns to a sweeper (read from the stored results, skipped
# runs included).
NON_RESULT_KEYS = ("name", "cache_dir", "search_batch", "timing", "bootstrap", "objective")
# Of those, the keys that say where a run writes: a re-run of a stored run (reproduce,
# select --out) takes this receval's own value, never the one the run saved (a stored run
# is data: it does not choose where anything is written).
PLACE_KEYS = ("cache_dir",)
# Keys of a component node (the retriever, its fused members, the re-ranker) that say
# where a dense encoder runs, not what it computes: encoding on Ray gives the same vectors
# (receval/encoders/distributed.py), so a run encoded there and one encoded here are one run.
EXECUTION_KEYS = ("distributed", "ray")
COMPONENTS = ("retriever", "rerank", "transform")
#: Keys added after runs were stored, with the value that changes nothing: at that value a
#: key is left out of the identity, so a run stored before the key existed keeps its hash
#: (resume still skips it) and a run that sets it is told apart.
ADDED_KEYS = {
    "dataset.excluded": None, "dataset.exclude_self": False, "dataset.nuggets": None,
    "metrics.tokenizer": None, "relevance.nugget_coverage": 0.75,
    "retriever.max_backoff": 30.0,  # the http retriever's, from the endpoint fields every remote component has
}


def is_result_key(dotted: str) -> bool:
    """False for ``name``, ``cache_dir``, ``search_batch``, ``timing.*``, ``bootstrap.*`` and ``objective.*``,
    and for :data:`EXECUTION_KEYS` anywhere in a component (``retriever.ray.workers``,
    ``retriever.members.1.distributed``)."""
    if any(dotted == key or dotted.startswith(key + ".") for key in NON_RESULT_KEYS):
        return False
    parts = dotted.split(".")
    return not (parts[0] in COMPONENTS and any(part in EXECUTION_KEYS for part in parts[1:]))


def result_config(config: dict) -> dict:
    """``config`` (resolved, plain data) without the :data:`NON_RESULT_KEYS` and
    :data:`EXECUTION_KEYS` (list items too: a fused retriever's members), nor the
    :data:`ADDED_KEYS` at their value that changes nothing. A null
    ``transform`` is left out: runs saved before the group existed had none, and keep
    their identity."""
    if isinstance(config, dict) and "transform" in config and config["transform"] is None:
        config = {key: value for key, value in config.items() if key != "transform"}

    def keep(node, prefix: str):
        if isinstance(node, list):
            return [keep(value, f"{prefix}{i}.") for i, value in enumerate(node)]
        if not isinstance(node, dict):
            return node
        return {
            key: keep(value, f"{prefix}{key}.")
            for key, value in node.items()
            if is_result_key(f"{prefix}{key}") and not _unchanged(f"{prefix}{key}", value)
        }

    return keep(config, "")


def _unchanged(dotted: str, value) -> bool:
    """An :data:`ADDED_KEYS` key at the value that changes nothing."""
    return dotted in ADDED_KEYS and value == ADDED_KEYS[dotted] and type(value) is type(ADDED_KEYS[dotted])


def identity_hash(config: dict, contents: dict[str, str] | None = None) -> str:
    """The hash stored as ``config_hash`` with a run and compared by resume. ``contents``:
    the sha256 of files the results depend on by their bytes, not their path (a token
    budget's ``metrics.tokenizer``), by config key: a file changed in place is another run."""
    kept = result_config(config)
    if contents:
        kept = {**kept, "contents": dict(sorted(contents.items()))}
    return config_hash(kept)


def mixed_datasets(runs: Sequence) -> str | None:
    """One line naming the runs, grouped by dataset fingerprint, when runs shown side
    by side were made from different dataset files; None when they all agree.

    ``runs`` are :class:`receval.runs.Run`-like (``run_dir``, ``metadata``, ``info``);
    a run without a fingerprint (an external TREC run) is left out."""
    groups: dict[str, list[str]] = {}
    for run in runs:
        found = (getattr(run, "metadata", None) or {}).get("dataset_fingerprint") or (
            getattr(run, "info", None) or {}
        ).get("dataset_fingerprint")
        if found:
            groups.setdefault(str(found), []).append(str(run.run_dir))
    if len(groups) < 2:
        return None
    parts = [f"{fp[:8]}: {', '.join(dirs)}" for fp, dirs in groups.items()]
    return (
        "these runs were made from different dataset files (fingerprints differ), "
        "so their numbers are not comparable: " + "; ".join(parts)
    )
