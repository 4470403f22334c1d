"""``python -m receval [COMMAND] ...``: the same as the ``receval`` command (:mod:`receval.cli.main`)."""

from receval.cli.main import main

raise SystemExit(main())
