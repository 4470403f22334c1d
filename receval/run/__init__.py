"""The run side's own modules: from a composed config to a sealed run folder.

:mod:`.config` (the run-level schema and its registration), :mod:`.spec` (one validated,
frozen run spec), :mod:`.argv` and :mod:`.hydra_internals` (the command line before and
around Hydra), :mod:`.components` (the registry: group + kind -> schema + class),
:mod:`.stages` (transform -> first stage -> re-rank, timed), :mod:`.ranking` (top-k and
the tie rule), :mod:`.metrics` and :mod:`.evaluate` (per-question measures), :mod:`.pipeline`
(load -> chunk -> index -> search -> evaluate -> write), :mod:`.written` and :mod:`.shown`
(what a run writes of its config and for ``--show``). The components themselves live in
their own packages (``receval.chunking``, ``receval.retrievers``, ``receval.rerankers``,
``receval.transforms``, ``receval.encoders``, ``receval.datasets``, ``receval.measures``);
the read side (``receval.results``, ``stats``, ``analysis``, ``render``) imports none of them.
"""
