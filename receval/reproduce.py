"""``python -m receval.reproduce``: the command is :mod:`receval.cli.reproduce`."""

from receval.cli.reproduce import main

if __name__ == "__main__":
    raise SystemExit(main())
