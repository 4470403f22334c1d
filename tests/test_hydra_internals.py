"""The Hydra internals receval relies on are still there, in the shape it uses.

They all live in :mod:`receval.run.hydra_internals` (checked against the Hydra named by its
``CHECKED_AGAINST``): receval's sweeper (receval/hydra_plugin) derives from Hydra's
private ``BasicSweeper``, :func:`receval.cli.preflight.unknown_overrides_named` swaps
``ConfigLoaderImpl._apply_overrides_to_config`` while a command runs, and
``share_config_store`` makes the ConfigStore its own deep copy. None is public API: a
Hydra upgrade may change them. Each test here fails with one message naming the Hydra
version, the internal that changed and the receval code that uses it, instead of a
sweep failing somewhere later.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import hydra
import pytest

from receval.run import hydra_internals

ROOT = Path(__file__).resolve().parent.parent


def require(ok: bool, internal: str, used_by: str) -> None:
    if not ok:
        pytest.fail(
            f"Hydra {hydra.__version__}: {internal} is not what receval relies on ({used_by}); "
            "adapt that code to this Hydra, or pin hydra-core to a version where it holds",
            pytrace=False,
        )


def parameters(function) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


SWEEPER = "receval/hydra_plugin (RecevalSweeper)"
PREFLIGHT = "receval.cli.preflight.unknown_overrides_named"


def test_basic_sweeper_has_what_recevals_sweeper_uses():
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    except ImportError:
        require(False, "hydra._internal.core_plugins.basic_sweeper.BasicSweeper (import)", SWEEPER)
    require(parameters(BasicSweeper.__init__)[:2] == ["max_batch_size", "params"],
            f"BasicSweeper.__init__{inspect.signature(BasicSweeper.__init__)}", SWEEPER)
    require(set(parameters(BasicSweeper.setup)) >= {"hydra_context", "task_function", "config"},
            f"BasicSweeper.setup{inspect.signature(BasicSweeper.setup)}", SWEEPER)
    for name, wanted in (("_parse_config", []), ("is_done", []), ("get_job_batch", []),
                         ("split_arguments", ["overrides", "max_batch_size"])):
        method = getattr(BasicSweeper, name, None)
        require(callable(method) and parameters(method) == wanted, f"BasicSweeper.{name}({', '.join(wanted)})", SWEEPER)
    # the attributes RecevalSweeper.sweep reads or sets: set by __init__/setup, read by get_job_batch
    init, setup = inspect.getsource(BasicSweeper.__init__), inspect.getsource(BasicSweeper.setup)
    for attribute, source in (("max_batch_size", init), ("config", setup), ("launcher", setup), ("hydra_context", setup)):
        require(f"self.{attribute} =" in source, f"BasicSweeper's attribute self.{attribute}", SWEEPER)
    require("self.overrides" in inspect.getsource(BasicSweeper.get_job_batch),
            "BasicSweeper.get_job_batch reading self.overrides (the batches sweep() sets)", SWEEPER)


def test_the_sweepers_context_and_parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.plugins import Plugins
    from hydra.types import HydraContext

    fields = getattr(HydraContext, "__dataclass_fields__", {})
    require({"config_loader", "callbacks"} <= set(fields), "hydra.types.HydraContext(config_loader, callbacks)", SWEEPER)
    require("config_loader" in parameters(OverridesParser.create), "OverridesParser.create(config_loader=...)", SWEEPER)
    require(callable(getattr(OverridesParser, "parse_overrides", None)), "OverridesParser.parse_overrides", SWEEPER)
    require(callable(getattr(Plugins, "register", None)), "Plugins.register", "receval.cli.run.use_sweeper")


def test_config_loader_has_what_receval_swaps_and_wraps():
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    apply = ConfigLoaderImpl.__dict__.get("_apply_overrides_to_config")
    require(isinstance(apply, staticmethod), "ConfigLoaderImpl._apply_overrides_to_config (a staticmethod)", PREFLIGHT)
    require(parameters(apply.__func__) == ["overrides", "cfg"],
            f"ConfigLoaderImpl._apply_overrides_to_config{inspect.signature(apply.__func__)}", PREFLIGHT)
    require(parameters(ConfigLoaderImpl.load_sweep_config) == ["master_config", "sweep_overrides"],
            f"ConfigLoaderImpl.load_sweep_config{inspect.signature(ConfigLoaderImpl.load_sweep_config)}",
            "receval/hydra_plugin (ComposedOnce)")


def test_an_override_of_a_missing_key_fails_as_preflight_expects():
    """unknown_overrides_named recognises Hydra's refusal by its type and cause."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    cfg = OmegaConf.create({"chunking": {"max_words": 20}})
    OmegaConf.set_struct(cfg, True)
    override = OverridesParser.create().parse_overrides(["chunking.max_word=30"])
    try:
        ConfigLoaderImpl._apply_overrides_to_config(override, cfg)
        raised = None
    except Exception as error:  # noqa: BLE001 - the type is what is checked
        raised = error
    require(isinstance(raised, ConfigCompositionException)
            and isinstance(raised.__cause__, (ConfigAttributeError, ConfigKeyError)),
            f"an override of a missing key raising ConfigCompositionException from a ConfigKeyError "
            f"(got {type(raised).__name__} from {type(getattr(raised, '__cause__', None)).__name__})", PREFLIGHT)
    ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides(["chunking.max_words=30"]), cfg)
    assert cfg.chunking.max_words == 30


def test_the_check_is_passed_in_not_set_on_a_class():
    """The check comes from the composed config (hydra.callbacks.config_check.check_target)."""
    from omegaconf import OmegaConf

    from receval.cli.preflight import ConfigCheck, check_named
    from receval.run.pipeline import check_config

    assert ConfigCheck(check_target="receval.run.pipeline.check_config").check is check_config
    assert ConfigCheck().check is None
    config = OmegaConf.create({"hydra": {"callbacks": {"config_check": {"check_target": "receval.synth.job.check_config"}}}})
    from receval.synth.job import check_config as synth_check

    assert check_named(config) is synth_check
    assert check_named(OmegaConf.create({"hydra": {}})) is None


def test_the_internals_were_checked_against_this_hydra():
    """A Hydra upgrade is a deliberate step: run this file against it, adapt
    receval/run/hydra_internals.py where a test fails, then update CHECKED_AGAINST."""
    if hydra.__version__ != hydra_internals.CHECKED_AGAINST:
        pytest.fail(
            f"Hydra {hydra.__version__} is installed; receval's Hydra internals (receval/run/hydra_internals.py) "
            f"were checked against Hydra {hydra_internals.CHECKED_AGAINST}: if every other test here passes, "
            "set CHECKED_AGAINST to this version, or pin hydra-core to that one",
            pytrace=False,
        )


# Hydra's private modules, a patch of one of its classes, or its plugin registry
REACHES_IN = re.compile(r"hydra\._internal|ConfigLoaderImpl|ConfigStore\.__deepcopy__|hydra\.core\.plugins")


def test_no_module_but_hydra_internals_reaches_into_hydra():
    """One module holds them, so an upgrade has one place to look (docstrings may name them)."""
    found = []
    for path in sorted((ROOT / "receval").rglob("*.py")):
        if path.name == "hydra_internals.py":
            continue
        code = [line for line in path.read_text(encoding="utf-8").splitlines()
                if not line.lstrip().startswith("#") and ("import " in line or "=" in line or "(" in line)
                and not line.lstrip().startswith(("``", "-", "*"))]
        found += [f"{path.relative_to(ROOT)}: {line.strip()}" for line in code
                  if REACHES_IN.search(line) and "``" not in line]
    assert found == []


def test_the_override_swap_is_undone_after_the_block():
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    original = ConfigLoaderImpl.__dict__["_apply_overrides_to_config"]
    seen = []
    with hydra_internals.applying_overrides_with(lambda hydra_apply: lambda o, c: seen.append(hydra_apply)):
        ConfigLoaderImpl._apply_overrides_to_config([], None)
    assert seen == [original.__func__]
    assert ConfigLoaderImpl.__dict__["_apply_overrides_to_config"] is original


def test_basic_sweeper_is_hydras_class_as_it_is_now():
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    assert hydra_internals.basic_sweeper() is BasicSweeper
    assert f"{BasicSweeper.__module__}.{BasicSweeper.__qualname__}" == hydra_internals.BASIC_SWEEPER
