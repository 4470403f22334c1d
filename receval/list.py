"""``python -m receval.list``: the command is :mod:`receval.cli.list`."""

from receval.cli.list import main

if __name__ == "__main__":
    raise SystemExit(main())
