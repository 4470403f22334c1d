"""Your own retriever, in Python: ``retriever=python retriever.target=my_rag.search:MyRetriever``.

``target`` is ``module:attribute``: a class, constructed with ``params`` as keyword
arguments, or a factory function called with them, returning an object that
follows :class:`SearchFunction`. receval gives it the run's chunks (``fit``, when it
has one) and asks for each batch of ``search_batch`` questions' top k; latency is
measured around that ``search`` call. Answers are ordered and checked as in
:mod:`receval.retrievers.ranked` (chunk or section ids, finite scores, the one tie
rule). ``search`` may answer a question with its search calls instead,
``{"calls": [{"query", "hits", "latency_ms"?}, ...], "final"?: [...]}``
(:mod:`receval.retrievers.trajectory`). An exception in the user's code is theirs to see: its traceback is printed,
from the user's own frames, and the run stops with exit 2 before writing results; so
does a ``sys.exit`` in it (SystemExit), named as such. A KeyboardInterrupt stops the
whole sweep (exit 130, :mod:`receval.cli.run`).
A stored run naming a ``target`` is re-run only with ``reproduce --allow-code``.
"""

from __future__ import annotations

import difflib
import importlib
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np
from omegaconf import OmegaConf

from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError, RecevalError
from receval.core.secrets import credential_values
from receval.retrievers.ranked import Passage, RankOnly
from receval.retrievers.trajectory import rank_answers
from receval.schema import SHORTLIST, range_


@runtime_checkable
class SearchFunction(Protocol):
    """What ``retriever.target`` must build. ``fit`` is optional."""

    def search(self, questions: list[str], k: int) -> Sequence[Sequence[tuple[str, float]]]:
        """For each question, up to ``k`` ``(id, score)`` pairs, best first; ``id`` is a
        chunk id from ``fit`` or a section id. Or a trajectory: ``{"calls": [{"query":
        ..., "hits": [(id, score), ...]}, ...], "final": [...]}`` (final optional)."""
        ...

    # def fit(self, chunks: list[Passage]) -> None: every chunk of the run, each with
    #     .id, .text, .section_id, .page, .heading (also readable as chunk["text"])


@dataclass
class PythonConfig(RetrieverConfig):
    kind: str = "python"
    target: Optional[str] = None  # module:attribute (a class or a factory), importable
    params: Any = None  # keyword arguments (a mapping; null: none, and lets 'params={a: 1}' set it)
    pool: int = field(default=100, metadata=range_(*SHORTLIST))  # answers asked per question when fused or re-ranked

    def problems(self) -> list[str]:
        problems = []
        if self.params is not None and not isinstance(self.params, dict):
            problems.append(f"params={self.params!r}: give keyword arguments as a mapping, e.g. 'params={{top_n: 50}}'")
        if self.target is not None and ":" not in str(self.target):
            problems.append(f"target={self.target!r}: write it as module:attribute, e.g. my_rag.search:MyRetriever")
        return problems

    @staticmethod
    def describe(node) -> str:
        target = str(node.get("target") or "?")
        return f"python:{target.rsplit(':', 1)[-1]}"


class UserCodeError(RecevalError):
    """The user's code raised; its traceback has been printed."""


def exited(what: str, stop: SystemExit) -> UserCodeError:
    """User code that called ``sys.exit`` (or raised SystemExit): a user error, not the
    end of the sweep with exit status 0 and no summary."""
    return UserCodeError(
        f"{what} raised SystemExit({stop.code!r}) (sys.exit in your code): a retriever returns its answers "
        "or raises an exception, it does not end the process; no results were written"
    )


def user_call(what: str, call, *args, **kwargs):
    """``call(*args)``; an exception prints the user's traceback and becomes a UserCodeError,
    and so does SystemExit (without a traceback). KeyboardInterrupt passes: it stops the
    sweep (:mod:`receval.cli.run`)."""
    try:
        return call(*args, **kwargs)
    except SystemExit as stop:
        raise exited(what, stop) from None
    except Exception as error:  # the user's bug: show it as theirs, then stop cleanly
        tb = error.__traceback__.tb_next if error.__traceback__ is not None else None  # drop this frame
        sys.stderr.write("".join(traceback.format_exception(type(error), error, tb)))
        sys.stderr.flush()
        raise UserCodeError(
            f"{what} raised {type(error).__name__} (traceback above); no results were written"
        ) from None


def load_target(target: str | None, key: str = "retriever.target"):
    """The attribute ``module:attribute`` names, imported (the module's own errors are shown)."""
    if not target:
        raise ConfigError(
            f"{key} is required: module:attribute of your retriever, e.g. {key}=my_rag.search:MyRetriever"
        )
    module_name, _, attribute = str(target).partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{key}={target!r}: write it as module:attribute, e.g. my_rag.search:MyRetriever")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise ConfigError(
                f"{key}={target!r}: no module named {error.name!r}; put its folder on PYTHONPATH "
                f"(PYTHONPATH=/path/to/code receval ...)"
            ) from None
        module = user_call(f"importing {module_name}", importlib.import_module, module_name)
    except Exception:
        module = user_call(f"importing {module_name}", importlib.import_module, module_name)
    except SystemExit as stop:
        raise exited(f"importing {module_name}", stop) from None
    found = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            names = [n for n in dir(found) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"{key}={target!r}: {module_name} has no attribute {part!r}{hint}")
        found = getattr(found, part)
    if not callable(found):
        raise ConfigError(f"{key}={target!r} is not a class or a function returning a retriever")
    return found


class PythonRetriever(RankOnly):
    """The user's object behind receval's retriever protocol."""

    def __init__(self, target: str, make, params: dict, context: Context, pool: int = 100):
        super().__init__("python", context, pool)
        self.target = target
        self.credentials = credential_values(params)  # hidden from the queries its calls store
        self.user = user_call(f"{target}(**params)", make, **params)
        if not callable(getattr(self.user, "search", None)):
            raise ConfigError(
                f"retriever.target={target!r} built a {type(self.user).__name__} with no search(questions, k) method"
            )

    def index(self, records: list[Passage], texts: list[str]) -> None:
        fit = getattr(self.user, "fit", None)
        if callable(fit):
            user_call(f"{self.target} fit", fit, records)

    def answer(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.answer_calls(questions, k)[:2]

    def answer_calls(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray, list | None]:
        where = f"{self.target} search"
        answers = user_call(where, self.user.search, list(questions), int(k))
        if not isinstance(answers, (list, tuple)) or len(answers) != len(questions):
            got = len(answers) if isinstance(answers, (list, tuple)) else type(answers).__name__
            raise RecevalError(f"{where} returned {got} for {len(questions)} questions: return one list per question")
        return rank_answers(list(answers), self.ids, self.tie_rank, k, where, questions, own=self.credentials)


@component("retriever", "python", PythonConfig)
def build_python(node, context: Context) -> PythonRetriever:
    make = load_target(node.target)
    params = OmegaConf.to_container(node.params, resolve=True) if node.params is not None else {}
    return PythonRetriever(str(node.target), make, params, context, int(node.pool))
