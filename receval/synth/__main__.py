"""``python -m receval.synth``: the command is :mod:`receval.cli.synth`."""

from receval.cli.synth import main

if __name__ == "__main__":
    main()
