"""``python -m receval.compare``: the command is :mod:`receval.cli.compare`."""

from receval.cli.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
