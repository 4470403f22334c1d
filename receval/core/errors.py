"""User-facing errors: one clear message each, exit status 2, never a traceback.

Every error a user can fix (a bad file, label, config value or argument) is a
``RecevalError``. Entry points catch it, print ``receval: error: <message>`` on
stderr and exit with status 2 (see :func:`exit_on_error`). Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator, Mapping

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


class RecevalError(Exception):
    """A problem the user can fix; ``problems`` holds one line per problem."""

    def __init__(self, problems: str | Iterable[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class DatasetError(RecevalError):
    """Pages, questions or labels that cannot be used as they are."""


class ConfigError(RecevalError):
    """A config value out of range or inconsistent with another."""


class RunError(RecevalError):
    """A stored run that is missing, incomplete, or of an unknown schema."""


def report(error: RecevalError, stream=None) -> None:
    """Print each problem of ``error`` on its own line."""
    from receval.core.terminal import printable_lines  # a stored name's escape sequence is shown, never obeyed

    stream = stream or sys.stderr
    problems = [printable_lines(str(problem)) for problem in error.problems]
    if len(problems) == 1:
        print(f"receval: error: {problems[0]}", file=stream)
        return
    print(f"receval: error: {len(problems)} problems:", file=stream)
    for line in problems:
        print(f"  - {line}", file=stream)


@contextlib.contextmanager
def exit_on_error() -> Iterator[None]:
    """Turn a ``RecevalError`` into its message on stderr and exit status 2."""
    try:
        yield
    except RecevalError as error:
        report(error)
        sys.stdout.flush()
        raise SystemExit(EXIT_USER_ERROR) from None


def named(names: Mapping[str, str] | None, parameter: str, default: str | None = None) -> str:
    """``parameter`` as the caller calls it in a message: a command line maps parameters
    to its flags (``{"metric": "--metric"}``); a Python caller gets ``default`` or the
    parameter's name. Library functions name what was wrong through this, never a flag
    of their own."""
    return (names or {}).get(parameter, default or parameter)


class RecevalWarning(UserWarning):
    """Something a run found that the user should know (a damaged cache file, chunks the
    model cut, runs made from different data): the run goes on. Shown on stderr as
    ``receval: warning: <message>`` (:mod:`receval.core.progress`); a Python caller filters
    or records it like any warning."""
