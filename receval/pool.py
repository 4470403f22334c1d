"""``python -m receval.pool``: the command is :mod:`receval.cli.pool`."""

from receval.cli.pool import main

if __name__ == "__main__":
    raise SystemExit(main())
