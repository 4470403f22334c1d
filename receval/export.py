"""``python -m receval.export``: the command is :mod:`receval.cli.export`."""

from receval.cli.export import main

if __name__ == "__main__":
    raise SystemExit(main())
