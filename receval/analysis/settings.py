"""The bootstrap settings a report over stored runs uses: the first run's saved
``bootstrap`` config (:class:`receval.core.settings.BootstrapConfig`, the one type of these
settings), each value overridable."""

from __future__ import annotations

from receval.core.settings import MAX_RESAMPLES, BootstrapConfig, BootstrapMethod
from receval.core.errors import RecevalError
from receval.core.progress import warn
from receval.results.stored import Run

BOOTSTRAP_ARGS = "the n_resamples, seed and level arguments"  # how a Python caller overrides them

def _integer(value) -> bool:
    """An int that is no bool: ``n_resamples: true`` is no count (Python's True is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def bootstrap_settings(
    runs: list[Run],
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
    overridden_by: str = BOOTSTRAP_ARGS,
) -> BootstrapConfig:
    """The first run's saved ``bootstrap`` config, each value given here overriding it
    (a warning names ``overridden_by`` when the runs' saved settings differ); a value out
    of range is a RecevalError naming it."""
    defaults = BootstrapConfig()
    saved = [r.config.get("bootstrap") or {} for r in runs]
    first = saved[0] if saved else {}
    values = {
        "n_resamples": first.get("n_resamples", defaults.n_resamples),
        "level": first.get("level", defaults.level),
        "seed": first.get("seed", defaults.seed),
        "method": first.get("method", defaults.method),
    }
    given = {"n_resamples": n_resamples, "seed": seed, "level": level, "method": method}
    differ = [
        k for k in values if given[k] is None and len({repr(s.get(k, values[k])) for s in saved}) > 1
    ]
    if differ:
        warn(
            "runs differ in saved bootstrap settings (" + ", ".join(differ) + "); using the "
            f"first run's ({runs[0].run_dir}); set them with {overridden_by}"
        )
    values.update({k: v for k, v in given.items() if v is not None})
    problems = []
    if not _integer(values["n_resamples"]) or values["n_resamples"] < 1:
        problems.append(f"n_resamples={values['n_resamples']}: use an integer >= 1")
    elif values["n_resamples"] > MAX_RESAMPLES:
        problems.append(
            f"n_resamples={values['n_resamples']}: use at most {MAX_RESAMPLES:,} (2000 to 10000 "
            "is usual; every resample is held in memory)"
        )
    if not _integer(values["seed"]) or values["seed"] < 0:
        problems.append(f"seed={values['seed']}: use an integer >= 0")
    if isinstance(values["level"], bool) or not isinstance(values["level"], int | float) or not 0 < values["level"] < 1:
        problems.append(f"level={values['level']}: use a value between 0 and 1, e.g. 0.95")
    if values["method"] not in ("percentile", "bca"):
        problems.append(f"method={values['method']!r}: use percentile or bca")
    if problems:
        raise RecevalError(["bootstrap " + p for p in problems])
    return BootstrapConfig(
        n_resamples=int(values["n_resamples"]),
        level=float(values["level"]),
        seed=int(values["seed"]),
        method=BootstrapMethod(str(values["method"])),
    )


