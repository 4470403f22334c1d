"""``python -m receval.select``: the command is :mod:`receval.cli.select`."""

from receval.cli.select import main

if __name__ == "__main__":
    raise SystemExit(main())
