"""``python -m receval.sql``: the command is :mod:`receval.cli.sql`."""

from receval.cli.sql import main

if __name__ == "__main__":
    raise SystemExit(main())
