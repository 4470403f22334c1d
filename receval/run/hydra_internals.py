"""Every Hydra internal receval relies on, in one module: nothing else touches Hydra's
private classes (``hydra._internal``) or patches Hydra.

None of these is Hydra's public API; a Hydra upgrade may change them.
``tests/test_hydra_internals.py`` checks each one against the Hydra installed and names
the version they were last checked against (:data:`CHECKED_AGAINST`), so an upgrade
fails there, in one message naming what changed, not somewhere in a sweep.

- :func:`share_config_store`: a composition stops deep-copying the ConfigStore
  (``ConfigStore.__deepcopy__``);
- :func:`applying_overrides_with`: while a command runs, Hydra's loader applies the
  command line's overrides through receval's function
  (``ConfigLoaderImpl._apply_overrides_to_config``, used by
  :func:`receval.cli.preflight.unknown_overrides_named`);
- :func:`basic_sweeper`: Hydra's basic sweeper class, which receval's sweeper derives
  from (:mod:`receval.hydra_plugin`), and :data:`BASIC_SWEEPER`, its target name;
- :func:`scan_plugins`, :func:`register_sweeper`: Hydra's plugin registry, and a
  sweeper class made known to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

CHECKED_AGAINST = "1.3.8"  # the hydra-core every internal here was last checked against
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"  # its _target_


def share_config_store() -> None:
    """Make a deep copy of Hydra's ``ConfigStore`` the store itself.

    Every composition (each job of a sweep, each ``compose`` call) deep-copies Hydra's config
    repository (``CachingConfigRepository.__init__``), and with it the structured-config
    source's reference to the process-wide ``ConfigStore``: every schema receval registers.
    Sharing it makes a composition about 30% cheaper (``retriever=hybrid``: 0.30 -> 0.21 s
    on 2 cores). The store is a singleton that a composition only reads (``ConfigStore.load``
    deep-copies the node it returns), so the copy is pure cost; Hydra itself moved to
    reading the live singleton (facebookresearch/hydra#2928), and hydra-zen#769 reports the
    same cost. ``tests/test_config.py`` fails loudly if Hydra's structured-config source no
    longer holds the store (the patch can then go) or a composition changes what is stored."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[method-assign]


@contextlib.contextmanager
def applying_overrides_with(make: Callable[[Callable], Callable]) -> Iterator[None]:
    """While the block runs, Hydra's config loader applies overrides with
    ``make(hydra_apply)``: a function ``(overrides, cfg) -> None`` that may call Hydra's
    own ``hydra_apply(overrides, cfg)``. Undone afterwards, so code composing configs in
    the same process (tests, notebooks) sees Hydra's own behaviour."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    original = ConfigLoaderImpl.__dict__["_apply_overrides_to_config"]
    ConfigLoaderImpl._apply_overrides_to_config = staticmethod(make(original.__func__))
    try:
        yield
    finally:
        ConfigLoaderImpl._apply_overrides_to_config = original


def basic_sweeper() -> type:
    """Hydra's basic sweeper class, as it is now: imported when asked, never held at
    import, since Hydra's plugin scan re-executes its module (a class derived from the
    old one would then fail)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def scan_plugins() -> None:
    """Hydra's plugin scan (done once, when its registry is first asked for)."""
    from hydra.core.plugins import Plugins

    Plugins.instance()


def register_sweeper(sweeper: type) -> None:
    """Make ``sweeper`` known to Hydra's plugin registry (Hydra finds plugins by scanning
    ``hydra_plugins``, which misses a module served by an editable install's hook)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(sweeper)
