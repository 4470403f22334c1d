"""``python -m receval.traces``: the command is :mod:`receval.cli.traces`."""

from receval.cli.traces import main

if __name__ == "__main__":
    main()
