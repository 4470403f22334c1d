"""Name the swept values in the line each job of a sweep prints.

``python -m receval retriever=bm25 retriever.k1=1.2,1.5 retriever.b=0.5,0.75 -m``
runs four jobs that the summary line alone shows as four ``bm25 120 words``
lines; :func:`swept_suffix` adds ``[k1=1.5 b=0.75]`` from the job's overrides,
for every key the command line sweeps (``a,b``, ``range(...)``, ``choice(...)``)
other than those the line already shows (retriever and chunking).
"""

from __future__ import annotations

SHOWN = ("chunking.",)  # the summary line shows these itself (and the retriever)


def swept_keys(argv: list[str]) -> list[str]:
    """Keys the command line sweeps, in order (none when it cannot be parsed)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        overrides = OverridesParser.create().parse_overrides(args)
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
    from receval.results.labels import without_urls

    shown = [f"{key.rsplit('.', 1)[-1]}={_value(values[key])}" for key in keys if key in values]
    return f"  [{without_urls(' '.join(shown))}]" if shown else ""


def _value(text: str) -> str:
    """A swept value as labels show it: ``null`` reads ``none`` (receval.results.labels)."""
    return "none" if text.strip() in ("null", "~") else text
