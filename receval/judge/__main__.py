"""``python -m receval.judge``: the command is :mod:`receval.cli.judge`."""

from receval.cli.judge import main

if __name__ == "__main__":
    main()
