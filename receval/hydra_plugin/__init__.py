"""receval's sweeper (``hydra/sweeper=receval``, the default): Hydra's basic sweeper,
with every job checked before the first runs and each job's config composed once.

Installed as ``hydra_plugins.receval_sweeper`` (pyproject maps this folder there:
Hydra only instantiates sweepers from its ``hydra_plugins`` namespace); its config
is ``hydra/sweeper/receval`` (:func:`receval.run.config.register`). Import it only after
Hydra's plugin scan (:func:`receval.cli.run.use_sweeper`): the scan re-executes Hydra's
own plugin modules, and a class derived from the old ``BasicSweeper`` would fail. Same
expansion, order and batches as Hydra's basic sweeper; two differences:

- every job of every batch is composed, and given to the command's check (the
  function the composed config names in ``hydra.callbacks.config_check.check_target``,
  read when the sweeper is set up: :func:`receval.cli.preflight.check_named`), before
  the sweep folder is made: ``chunking.max_words=20,0,40 -m`` is one message naming
  job 1 (exit 2), not job 0's results and then a traceback;
- the launcher is handed the configs composed for that check instead of composing
  each job again (Hydra's basic sweeper composes every job twice: once to validate,
  once to launch; composition is most of a small job's fixed cost);
- the sweep folder is claimed for this sweep once the jobs are checked
  (:func:`receval.cli.preflight.claim_sweep_dir`): a different sweep already there is
  refused before any job runs; the same sweep again resumes.

Other sweepers (``hydra/sweeper=optuna``) pick their own trials and keep Hydra's
own checks.

Hydra internals used (``tests/test_hydra_internals.py`` fails naming the one that
changed): ``BasicSweeper`` (its ``__init__(max_batch_size, params)``, ``setup``,
``_parse_config``, ``split_arguments``, ``is_done``, ``get_job_batch`` and the
attributes ``config``, ``launcher``, ``hydra_context``, ``overrides``, ``max_batch_size``)
and ``ConfigLoaderImpl.load_sweep_config``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import HydraContext

from receval.run.hydra_internals import basic_sweeper

BasicSweeper = basic_sweeper()  # imported here, after Hydra's plugin scan (see above)


class ComposedOnce:
    """A config loader that serves each job config the sweeper composed (once each),
    and passes everything else to Hydra's loader.

    Pickled (a remote launcher ships its context to workers) it is Hydra's loader
    alone: the composed configs stay on the driver.
    """

    def __init__(self, loader) -> None:
        self._loader = loader
        self._composed: dict[tuple[int, tuple[str, ...]], list] = {}  # (master, overrides) -> configs

    def compose(self, master_config, overrides: Sequence[str]):
        cfg = self._loader.load_sweep_config(master_config, list(overrides))
        self._composed.setdefault((id(master_config), tuple(overrides)), []).append(cfg)
        return cfg

    def load_sweep_config(self, master_config, sweep_overrides: list[str]):
        kept = self._composed.get((id(master_config), tuple(sweep_overrides)))
        if kept:
            return kept.pop(0)
        return self._loader.load_sweep_config(master_config, sweep_overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def __reduce__(self):
        return self._loader.__reduce__()


class RecevalSweeper(BasicSweeper):
    """Hydra's basic sweeper, checking every job first and composing each once."""

    check: Callable[[object], None] | None  # the command's config check, set in setup

    def setup(self, *, hydra_context, task_function, config) -> None:
        from receval.cli.preflight import check_named

        self.check = check_named(config)
        self.composed = ComposedOnce(hydra_context.config_loader)
        context = HydraContext(config_loader=self.composed, callbacks=hydra_context.callbacks)
        super().setup(hydra_context=context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        from receval.core.errors import exit_on_error

        params = self._parse_config()
        params.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params), self.max_batch_size)
        from receval.cli.preflight import claim_sweep_dir, sweep_identity

        with exit_on_error():
            self.check_jobs(params)
            claim_sweep_dir(self.config.hydra.sweep.dir, sweep_identity(self.config))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        from omegaconf import OmegaConf

        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        returns = []
        first = 0
        while not self.is_done():
            batch = self.get_job_batch()
            results = self.launcher.launch(batch, initial_job_idx=first)
            for result in results:
                _ = result.return_value  # a failed job raises here, as in Hydra's sweeper
            first += len(batch)
            returns.append(results)
        return returns

    def check_jobs(self, params: Sequence[str]) -> None:
        """Compose every job (kept for the launcher) and raise one ``ConfigError``
        listing each bad value with the jobs it stops."""
        from omegaconf import open_dict, read_write

        from receval.core.errors import ConfigError

        swept = {p.split("=", 1)[0] for p in params if "," in p or "(" in p}
        problems: dict[str, list[str]] = {}
        number = 0
        for batch in self.overrides:
            for job in batch:
                cfg = self.composed.compose(self.config, job)
                if self.check is not None:
                    task = copy.deepcopy(cfg)  # the job's own view, as Hydra's run_job makes it
                    with read_write(task), open_dict(task):
                        del task["hydra"]
                    try:
                        self.check(task)
                    except ConfigError as error:
                        label = " ".join(o for o in job if o.split("=", 1)[0] in swept) or " ".join(job)
                        for problem in error.problems:
                            problems.setdefault(problem, []).append(f"{number} ({label})")
                number += 1
        if problems:
            raise ConfigError(
                f"{problem} [sweep job {', '.join(where)}]; nothing was run" for problem, where in problems.items()
            )
