"""The commands: thin shells that parse arguments, call :mod:`receval.analysis` (or the
run side) and :mod:`receval.render`. :mod:`.run` (``receval``, with
:mod:`.preflight`, :mod:`.resume` and :mod:`.objective`), :mod:`.synth`, :mod:`.report`,
:mod:`.compare`, :mod:`.select`, :mod:`.reproduce`, :mod:`.export`, :mod:`.list`, :mod:`.sql`;
:mod:`.options` holds what they share (argparse, the flag of each library parameter)."""
