"""``python -m receval``: the command is :mod:`receval.cli.run`."""

from receval.cli.run import main

main()
