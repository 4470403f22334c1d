"""``python -m receval.report``: the command is :mod:`receval.cli.report`."""

from receval.cli.report import main

if __name__ == "__main__":
    raise SystemExit(main())
