"""Command-line overrides read by Hydra's own parser: what a command line sets and sweeps.

- :func:`key_values`: an override's key and every value it gives (each value of a
  sweep, a mapping whole), for the trust rules (:mod:`receval.core.trust`) that run
  before Hydra writes anything. A value Hydra's grammar cannot read (a URL with
  ``?key=value``, which Hydra refuses in a message that would echo it) is taken as
  written and at each comma.
- :func:`swept_suffix` names the swept values in the line each job of a sweep prints:
  ``receval retriever=bm25 retriever.k1=1.2,1.5 retriever.b=0.5,0.75 -m``
runs four jobs that the summary line alone shows as four ``bm25 120 words``
lines; :func:`swept_suffix` adds ``[k1=1.5 b=0.75]`` from the job's overrides,
for every key the command line sweeps (``a,b``, ``range(...)``, ``choice(...)``)
other than those the line already shows (retriever and chunking).
"""

from __future__ import annotations

from receval.core.secrets import without_urls

SHOWN = ("chunking.",)  # the summary line shows these itself (and the retriever)
_QUOTES = "'\""


def _parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _flat(value) -> list:
    """A parsed value as the list of values it gives (a list's items; anything else itself)."""
    if isinstance(value, list | tuple):
        return [v for item in value for v in _flat(item)]
    return [value]


def key_values(arg: str) -> tuple[str, list]:
    """``(key, values)`` of one ``key=value`` override (``+``/``~``/``++`` left off the
    key): the value Hydra parses (a string, number, None, or a mapping), or each value
    of a sweep (``a,b``, ``choice(...)``, ``range(...)``). When Hydra cannot parse it,
    the text after ``=`` as written, then its comma-separated parts, quotes stripped."""
    key, _, raw = arg.partition("=")
    key = key.lstrip("+~")
    try:
        override = _parser().parse_override(arg)
    except Exception:  # noqa: BLE001 - Hydra's grammar refuses it: read the text itself
        inner = raw.strip()
        for sweep in ("choice(", "range("):
            if inner.startswith(sweep) and inner.endswith(")"):
                inner = inner[len(sweep):-1]
        parts = [raw, *inner.split(",")]
        return key, [part.strip().strip(_QUOTES) for part in parts]
    if override.is_sweep_override():
        return override.key_or_group, list(override.sweep_string_iterator())
    return override.key_or_group, _flat(override.value())


def swept_keys(argv: list[str]) -> list[str]:
    """Keys the command line sweeps, in order (none when it cannot be parsed)."""
    args = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        overrides = _parser().parse_overrides(args)
    except Exception:  # noqa: BLE001 - Hydra already said what is wrong with it
        return []
    return [o.key_or_group for o in overrides if o.is_sweep_override()]


def swept_suffix(job_overrides: list[str], argv: list[str]) -> str:
    """``"  [k1=1.5 b=0.75]"`` for a job of a sweep over k1 and b; "" otherwise."""
    keys = [k for k in swept_keys(argv) if k != "retriever" and not k.startswith(SHOWN)]
    values = {}
    for override in job_overrides:
        key, _, value = override.lstrip("+~").partition("=")
        values[key] = value
    shown = [f"{key.rsplit('.', 1)[-1]}={_value(values[key])}" for key in keys if key in values]
    return f"  [{without_urls(' '.join(shown))}]" if shown else ""


def _value(text: str) -> str:
    """A swept value as labels show it: ``null`` reads ``none`` (receval.results.labels)."""
    return "none" if text.strip() in ("null", "~") else text
