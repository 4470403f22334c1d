"""The one command, ``receval`` (and ``python -m receval``): a first word naming a
command reaches it; anything else is handed to the run command, so

    receval retriever=bm25,tfidf -m        # = receval run retriever=bm25,tfidf -m
    receval report runs/2026-11-29/10-00-00
    receval --help                         # every command, one line each

:data:`COMMANDS` is the one registry: adding a command is one line. A command module
is imported only when it is called (``receval --help`` imports none of them).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    module: str  # its module, with a main(): main(argv) for argparse, main() for Hydra
    summary: str  # the one line ``receval --help`` shows


#: name -> command. ``run`` is also what any first word that is not a name here reaches.
COMMANDS: dict[str, Command] = {
    "run": Command("receval.cli.run", "run one configuration, or a sweep with -m (also: receval KEY=VALUE ...)"),
    "report": Command("receval.cli.report", "report stored runs side by side: measures, intervals, gates, suites"),
    "compare": Command("receval.cli.compare", "compare two stored runs question by question (paired test)"),
    "select": Command("receval.cli.select", "choose a configuration from a sweep; writes best.yaml"),
    "reproduce": Command("receval.cli.reproduce", "re-run stored runs from their saved configs and check the numbers"),
    "list": Command("receval.cli.list", "list every stored run under folders of runs"),
    "pool": Command("receval.cli.pool", "pool what stored runs retrieved that no label covers, to be judged"),
    "judge": Command("receval.cli.judge", "grade a pool with an LLM judge (Hydra config conf/judge.yaml)"),
    "synth": Command("receval.cli.synth", "write synthetic questions from a collection (Hydra config conf/synth.yaml)"),
    "sql": Command("receval.cli.sql", "SQL (DuckDB) over stored runs"),
    "export": Command("receval.cli.export", "export stored runs: TREC run and qrels files, or MLflow"),
    "traces": Command("receval.cli.traces", "import OpenInference retriever spans (JSONL) as a stored run"),
}


def available() -> dict[str, Command]:
    """The commands whose module is installed (an optional one, e.g. ``traces``,
    is listed only once its module exists)."""
    return {name: c for name, c in COMMANDS.items() if importlib.util.find_spec(c.module) is not None}


def usage() -> str:
    """What ``receval --help`` prints."""
    commands = available()
    width = max(map(len, commands))
    lines = [
        "usage: receval [COMMAND] [ARGS...]",
        "",
        "Retrieval evaluation: run configurations over a collection, then read the stored runs.",
        "A first word that is not a command runs a configuration: receval retriever=bm25,tfidf -m",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {command.summary}" for name, command in commands.items()),
        "",
        "receval COMMAND --help shows a command's flags (receval run --help: its config groups).",
    ]
    return "\n".join(lines) + "\n"


def split(argv: list[str]) -> tuple[str, list[str]]:
    """``argv`` -> (command name, its arguments): the first word if it names a command,
    else ``run`` with every word."""
    if argv and argv[0] in available():
        return argv[0], argv[1:]
    return "run", argv


def call(name: str, argv: list[str]) -> int:
    """Run command ``name`` on ``argv``; its exit status. A Hydra command (its ``main``
    takes no arguments) reads ``sys.argv``, set here to what it would see alone."""
    main = importlib.import_module(COMMANDS[name].module).main
    if inspect.signature(main).parameters:
        return main(argv) or 0
    sys.argv = [sys.argv[0] if sys.argv else "receval", *argv]
    main()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--help"], ["-h"], ["help"]):
        sys.stdout.write(usage())
        return 0
    name, rest = split(argv)
    return call(name, rest)


def entry() -> None:
    """The ``receval`` console script."""
    raise SystemExit(main())
