"""Synthetic questions: ask a chat model for a question about each section.

``python -m receval.synth synth.base_url=... synth.model=... [overrides]`` writes a
questions file that ``python -m receval dataset.questions=FILE`` reads as it is.

What is generated. The *units* are the dataset's sections (``synth.unit=section``)
or their chunks (``synth.unit=chunk``, cut by the ``chunking`` group, without the
heading prefix); labels are always section ids. ``synth.limit`` keeps a sample of
that many units drawn with ``synth.seed`` (a permutation prefix, so a larger limit
keeps every unit a smaller one chose), in dataset order. For each unit
``synth.per_section`` questions are asked for, one request each; the second and
later requests list the questions already written for that unit and ask for a
different one. Styles (``synth.style``):

- ``direct``: a question the passage answers, understandable without the passage;
- ``paraphrase``: the same, worded without the passage's distinctive words, as a
  user who never saw the page would ask (lexical overlap is what makes synthetic
  questions easy; see :mod:`receval.overlap`);
- ``multi``: a question that needs two passages: each unit is paired with a unit of
  another section, from the same page when the page has one, otherwise from any
  page; the partner is drawn from ``synth.seed`` and the unit's id alone (it does
  not change with ``limit``). Labelled with both sections.

Replies. The model must answer with the JSON object ``{"question", "answer"}``
(structured output, see :mod:`receval.llm` for the fallbacks and retries); both
must be non-empty strings. A unit whose request still fails after the retries is
reported on stderr (``receval: warning: skipped section '<id>': <reason>``) and
skipped; ``synth.max_failures`` units failing in a row stop the job (exit status 2),
as do a wrong key, URL or model and an unreachable server.

The file (``synth.out``), one JSON object per line::

    {"id": "syn-direct-<16 hex>", "kind": "direct", "question": "...",
     "relevant": ["fines#daily-rates"], "split": "dev", "answer": "...",
     "provenance": {"model", "style", "prompt_hash", "temperature", "seed",
                    "source": {"dataset", "unit", "ids", "n", "text_sha256"}}}

- ``id``: ``syn-<style>-`` + the first 16 hex of sha256 over the unit id (and, for
  ``multi``, the partner's id) and the question's number ``n`` (0-based), joined by
  NUL bytes. The same unit, style and ``n`` always give the same id.
- ``split``: ``dev`` when the first 8 hex digits of sha256(id), read as a fraction
  of 16**8, fall below ``synth.dev_fraction``; otherwise ``test``.
- ``prompt_hash``: the first 12 hex of sha256 over the prompt templates of the
  style: it changes exactly when the wording sent to the model changes.
- ``source.text_sha256``: first 16 hex of sha256 over the passage text(s), to see
  later whether a page changed since its question was written.

Resuming. Records are appended one line at a time, flushed and fsync'ed, in the
order they finish. A rerun reads the file first and skips every id already in it,
so an interrupted job loses at most the line being written, and changing
``per_section`` or ``limit`` upwards only adds. An incomplete last line (a crash
mid-write) is cut off with a warning; any other unreadable line is an error naming
it. Questions of other styles in the same file are left alone. The API key never
reaches the file, the saved config or a message: it is read from the environment
variable named by ``synth.api_key_env`` when each request is sent.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from receval import outputs
from receval.datasets import LIBRARY, Section
from receval.errors import ConfigError, DatasetError, RecevalError
from receval.llm import ChatClient, ReplyError, check_key_env, endpoint


QA_SCHEMA = {
    "title": "question_answer",
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "the question a user would ask"},
        "answer": {"type": "string", "description": "a short answer taken from the passage(s)"},
    },
    "required": ["question", "answer"],
    "additionalProperties": False,
}

# ------------------------------------------------------------------------ prompts

SYSTEM = (
    "You write test questions for evaluating a search engine over a collection of pages. "
    "Each question must be one that a real user could type, that the given text answers, "
    "and that makes sense on its own to someone who has not seen the text (never say "
    '"the passage", "the text" or "according to"). '
    'Reply with one JSON object with exactly two string keys, "question" and "answer" '
    "(a short answer taken from the text), and nothing else."
)

INSTRUCTIONS = {
    "direct": (
        "Write one question that this passage answers. Make it specific to this passage: "
        "it should not be answerable from general knowledge."
    ),
    "paraphrase": (
        "Write one question that this passage answers, worded the way a user who has never "
        "seen the passage would ask it. Do not reuse the passage's distinctive words or "
        "phrases: use synonyms and everyday language, so the question cannot be matched to "
        "the passage by shared words alone."
    ),
    "multi": (
        "Write one question whose answer needs information from both passages: neither "
        "passage alone should be enough to answer it. Ask it naturally, as one question."
    ),
}

PASSAGE = "<passage>\n{heading}{text}\n</passage>"
EARLIER = "Questions already written about this text (ask something different):\n{questions}"


def prompt_hash(style: str) -> str:
    """First 12 hex of sha256 over every template the style sends."""
    blob = json.dumps([SYSTEM, INSTRUCTIONS[style], PASSAGE, EARLIER, QA_SCHEMA], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def _cut(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " ..."


def build_messages(style: str, units: list["Unit"], earlier: list[str], max_words: int = 800) -> list[dict]:
    """The chat messages for one question about ``units`` (two for ``multi``)."""
    passages = "\n\n".join(
        PASSAGE.format(heading=f"Heading: {u.heading}\n" if u.heading else "", text=_cut(u.text, max_words))
        for u in units
    )
    parts = [passages, INSTRUCTIONS[style]]
    if earlier:
        parts.append(EARLIER.format(questions="\n".join(f"- {q}" for q in earlier)))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def validate_reply(reply: dict) -> str | None:
    """None when ``question`` and ``answer`` are non-empty strings; else the problem."""
    for key in ("question", "answer"):
        value = reply.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"{key!r} is missing or not a non-empty string"
    return None


# ------------------------------------------------------------------------ units


@dataclass(frozen=True)
class Unit:
    """What one question is written from: a section or one of its chunks."""

    id: str
    section_id: str
    page: str
    heading: str
    text: str


def load_sections(dataset_cfg) -> list[Section]:
    """The dataset's sections alone: a folder needs no questions file to be given questions."""
    from receval.datasets import beir, folder

    if dataset_cfg.format == "folder":
        root = Path(dataset_cfg.path).expanduser() if dataset_cfg.path else LIBRARY
        if not (root / "pages").is_dir():
            raise DatasetError(
                f"dataset.path={str(root)!r}: no pages/ folder there; point it at a folder holding pages/*.md"
            )
        return folder.read_pages(root / "pages")[0]
    if dataset_cfg.format == "beir":
        if not dataset_cfg.path:
            raise DatasetError("dataset.path is required for dataset.format=beir (the folder holding corpus.jsonl)")
        corpus = Path(dataset_cfg.path).expanduser() / "corpus.jsonl"
        if not corpus.is_file():
            raise DatasetError(f"{corpus}: not found; dataset.path must hold corpus.jsonl")
        return beir.read_corpus(corpus, bool(dataset_cfg.title))
    raise DatasetError(f"dataset.format={dataset_cfg.format!r} is not known; use folder or beir")


def dataset_questions_file(dataset_cfg) -> Path | None:
    """The questions file the dataset itself reads (never to be overwritten by synth)."""
    if dataset_cfg.questions:
        return Path(dataset_cfg.questions).expanduser()
    if dataset_cfg.format == "folder":
        return (Path(dataset_cfg.path).expanduser() if dataset_cfg.path else LIBRARY) / "questions.jsonl"
    if dataset_cfg.format == "beir" and dataset_cfg.path:
        return Path(dataset_cfg.path).expanduser() / "queries.jsonl"
    return None


def make_units(sections: list[Section], unit: str = "section", chunking=None) -> list[Unit]:
    """Sections, or their chunks (``chunking``: max_words, overlap), as units."""
    if unit == "section":
        return [Unit(s.id, s.id, s.page, s.heading, s.text) for s in sections if s.text.split()]
    from receval.chunking import chunk_sections

    by_id = {s.id: s for s in sections}
    chunks = chunk_sections(sections, chunking.max_words, chunking.overlap, headings=False)
    return [
        Unit(c.id, c.section_id, by_id[c.section_id].page, by_id[c.section_id].heading, c.text)
        for c in chunks
        if c.text.split()
    ]


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def select_units(units: list[Unit], limit: int | None, seed: int) -> list[Unit]:
    """At most ``limit`` units: a prefix of a seeded permutation, kept in dataset order."""
    if limit is None or limit >= len(units):
        return list(units)
    chosen = np.sort(np.random.default_rng(seed).permutation(len(units))[:limit])
    return [units[i] for i in chosen]


def pick_partners(units: list[Unit], all_units: list[Unit], seed: int) -> dict[str, Unit]:
    """For ``multi``: each unit's partner, a unit of another section (same page if possible)."""
    if len({u.section_id for u in all_units}) < 2:
        raise DatasetError("synth.style=multi pairs two sections, but the dataset has fewer than two")
    by_page: dict[str, list[Unit]] = defaultdict(list)
    for u in all_units:
        by_page[u.page].append(u)
    partners = {}
    for u in units:
        rng = np.random.default_rng([seed, _stable_int(u.id)])
        same_page = [v for v in by_page[u.page] if v.section_id != u.section_id]
        if same_page:
            partners[u.id] = same_page[int(rng.integers(len(same_page)))]
            continue
        while True:  # terminates: another section exists
            v = all_units[int(rng.integers(len(all_units)))]
            if v.section_id != u.section_id:
                partners[u.id] = v
                break
    return partners


# ------------------------------------------------------------------------ records


def record_id(style: str, unit_ids: list[str], n: int) -> str:
    key = "\0".join([*unit_ids, str(n)])
    return f"syn-{style}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def split_of(question_id: str, dev_fraction: float) -> str:
    """``dev`` or ``test``, from the id's hash: stable whatever else is in the file."""
    share = int(hashlib.sha256(question_id.encode("utf-8")).hexdigest()[:8], 16) / 16**8
    return "dev" if share < dev_fraction else "test"


def make_record(
    qid: str, style: str, units: list[Unit], n: int, reply: dict, syn, dataset_name: str
) -> dict:
    texts = "\0".join(u.text for u in units)
    relevant = list(dict.fromkeys(u.section_id for u in units))
    return {
        "id": qid,
        "kind": style,
        "question": " ".join(reply["question"].split()),
        "relevant": relevant,
        "split": split_of(qid, float(syn.dev_fraction)),
        "answer": reply["answer"].strip(),
        "provenance": {
            "model": str(syn.model),
            "style": style,
            "prompt_hash": prompt_hash(style),
            "temperature": float(syn.temperature),
            "seed": int(syn.seed),
            "source": {
                "dataset": dataset_name,
                "unit": str(syn.unit),
                "ids": [u.id for u in units],
                "n": n,
                "text_sha256": hashlib.sha256(texts.encode("utf-8")).hexdigest()[:16],
            },
        },
    }


class QuestionsFile:
    """An append-only JSONL file of records: read what is there, then add line by line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._handle = None

    def resume(self, warn=None) -> dict[str, dict]:
        """Records already in the file, by id; an incomplete last line is cut off."""
        if not self.path.exists():
            return {}
        if not self.path.is_file():
            raise ConfigError(f"synth.out={str(self.path)!r} is not a file")
        try:
            data = self.path.read_bytes()
        except OSError as error:
            raise ConfigError(f"synth.out={str(self.path)!r}: cannot read it ({error.strerror})") from None
        records: dict[str, dict] = {}
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        problems = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            record, why = _parse_line(raw)
            if record is None:
                problems.append(
                    f"{self.path}:{number}: {why}; synth appends one JSON question per line here: "
                    "fix or delete that line, or choose another synth.out"
                )
                continue
            records[record["id"]] = record
        if problems:
            raise DatasetError(problems)
        if tail.strip():
            record, _ = _parse_line(tail)
            with open(self.path, "r+b") as handle:
                if record is None:  # a line cut short by a crash: drop it
                    handle.truncate(len(data) - len(tail))
                    if warn:
                        warn(f"{self.path}: dropped an incomplete last line (an interrupted run); it is asked for again")
                else:  # complete but unterminated: terminate it
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"\n")
                    records[record["id"]] = record
                handle.flush()
                os.fsync(handle.fileno())
        return records

    def __enter__(self) -> "QuestionsFile":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "ab")
        except OSError as error:
            raise ConfigError(f"synth.out={str(self.path)!r}: cannot write there ({error.strerror})") from None
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def append(self, record: dict) -> None:
        """One whole line, flushed and fsync'ed before returning."""
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())


def _parse_line(raw: bytes) -> tuple[dict | None, str]:
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "not a valid JSON line"
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not record["id"]:
        return None, "not a JSON object with a string 'id'"
    return record, ""


# ------------------------------------------------------------------------ config


def check_config(cfg) -> None:
    """Every problem with the synth config at once, before any request."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(
            [f"{key} is required and has no value: set it on the command line ({key}=...)" for key in missing]
        )
    syn = cfg.synth
    problems = []
    for check in (lambda: endpoint(syn.base_url), lambda: check_key_env(syn.api_key_env, endpoint(syn.base_url))):
        try:
            check()
        except ConfigError as error:
            problems += error.problems
            break
    if not str(syn.model).strip():
        problems.append("synth.model is empty: name the chat model (e.g. synth.model=llama3.1)")
    at_least = {
        "per_section": 1, "concurrency": 1, "max_retries": 0, "max_failures": 0, "passage_words": 1,
    }
    for key, low in at_least.items():
        if syn[key] < low:
            problems.append(f"synth.{key}={syn[key]}: use an integer >= {low}")
    if syn.limit is not None and syn.limit < 1:
        problems.append(f"synth.limit={syn.limit}: use an integer >= 1, or null for every section")
    if not syn.timeout > 0:
        problems.append(f"synth.timeout={syn.timeout}: use a number of seconds > 0")
    for key in ("backoff", "max_backoff", "temperature"):
        if syn[key] < 0:
            problems.append(f"synth.{key}={syn[key]}: use a value >= 0")
    if not 0 <= syn.dev_fraction <= 1:
        problems.append(f"synth.dev_fraction={syn.dev_fraction}: use a share between 0 and 1")
    if not str(syn.out).strip():
        problems.append("synth.out is empty: name the questions file to write")
    if problems:
        raise ConfigError(problems)


# ------------------------------------------------------------------------ the loop


@dataclass
class Summary:
    path: Path
    written: int = 0
    already: int = 0  # records of this job found in the file
    failed: list[tuple[str, str]] = field(default_factory=list)  # (unit id, reason)
    requests: int = 0
    mode: str = ""


@dataclass
class _Task:
    units: list[Unit]  # the unit, then its partner for multi
    ids: list[str]  # one per n


def _warn(message: str) -> None:
    print(f"receval: warning: {message}", file=sys.stderr, flush=True)


class _Progress:
    """A rich progress bar on stderr when it is a terminal; messages printed above it."""

    def __init__(self, total: int, label: str, shown: bool):
        self.total, self.label, self.shown = total, label, shown and total > 0
        self.bar = self.task = None

    def __enter__(self) -> "_Progress":
        if self.shown:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("synth", total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def warn(self, message: str) -> None:
        if self.bar is not None:
            self.bar.console.print(f"receval: warning: {message}", markup=False, highlight=False, soft_wrap=True)
        else:
            _warn(message)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def make_client(syn) -> ChatClient:
    return ChatClient(
        syn.base_url, syn.model, syn.api_key_env, timeout=syn.timeout, max_retries=syn.max_retries,
        backoff=syn.backoff, max_backoff=syn.max_backoff,
    )


def generate(cfg, client: ChatClient | None = None, progress: bool | None = None) -> Summary:
    """Write the questions ``cfg.synth`` asks for to ``cfg.synth.out``; see the module doc."""
    check_config(cfg)
    syn = cfg.synth
    client = client or make_client(syn)
    out = Path(str(syn.out)).expanduser()
    own = dataset_questions_file(cfg.dataset)
    if own is not None and own.resolve() == out.resolve():
        raise ConfigError(
            f"synth.out={str(syn.out)!r} is the dataset's own questions file; write synthetic "
            "questions to a file of their own and pass it as dataset.questions"
        )
    reads = [LIBRARY if cfg.dataset.path is None else Path(cfg.dataset.path).expanduser()]
    outputs.check_output(out, protected_dirs=reads, flag="synth.out", existing_ok=True)  # appended to
    sections = load_sections(cfg.dataset)
    all_units = make_units(sections, syn.unit, cfg.chunking)
    if not all_units:
        raise DatasetError("the dataset has no text to write questions about")
    chosen = select_units(all_units, syn.limit, int(syn.seed))
    partners = pick_partners(chosen, all_units, int(syn.seed)) if syn.style == "multi" else {}

    file = QuestionsFile(out)
    done = file.resume(warn=_warn)
    tasks: list[_Task] = []
    summary = Summary(path=out)
    for unit in chosen:
        units = [unit, partners[unit.id]] if unit.id in partners else [unit]
        ids = [record_id(syn.style, [u.id for u in units], n) for n in range(syn.per_section)]
        summary.already += sum(i in done for i in ids)
        if not all(i in done for i in ids):
            tasks.append(_Task(units, ids))
    _warn_mixed(done, syn, out)

    stop = threading.Event()
    if progress is None:
        progress = sys.stderr.isatty()
    pending_total = sum(sum(i not in done for i in t.ids) for t in tasks)
    reporter = _Progress(pending_total, f"questions from {syn.model}", progress)

    def work(task: _Task) -> tuple[int, str | None]:
        earlier = [done[i]["question"] for i in task.ids if i in done and isinstance(done[i].get("question"), str)]
        written = 0
        for n, qid in enumerate(task.ids):
            if qid in done:
                continue
            if stop.is_set():
                return written, None
            messages = build_messages(syn.style, task.units, earlier, int(syn.passage_words))
            try:
                reply = client.complete_json(
                    messages, QA_SCHEMA, validate_reply, temperature=float(syn.temperature), seed=int(syn.seed)
                )
            except ReplyError as error:
                reporter.advance(sum(i not in done for i in task.ids[n:]))
                return written, error.reason
            record = make_record(qid, syn.style, task.units, n, reply, syn, cfg.dataset.name)
            file.append(record)
            earlier.append(record["question"])
            written += 1
            reporter.advance()
        return written, None

    in_a_row, last_reason = 0, ""
    with file, reporter:
        executor = ThreadPoolExecutor(max_workers=int(syn.concurrency), thread_name_prefix="synth")
        running: dict[Future, _Task] = {}
        queue = iter(tasks)
        try:
            while True:
                while len(running) < int(syn.concurrency) and not stop.is_set():
                    task = next(queue, None)
                    if task is None:
                        break
                    running[executor.submit(work, task)] = task
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = running.pop(future)
                    written, reason = future.result()  # a ServerError stops the job here
                    summary.written += written
                    if reason is None:
                        in_a_row = 0
                        continue
                    kind = "section" if syn.unit == "section" else "chunk"
                    reporter.warn(f"skipped {kind} {task.units[0].id!r}: {reason}")
                    summary.failed.append((task.units[0].id, reason))
                    in_a_row, last_reason = in_a_row + 1, reason
                    if syn.max_failures and in_a_row >= syn.max_failures:
                        raise RecevalError(
                            f"stopped after {in_a_row} {kind}s failed in a row (last: {last_reason}); is the "
                            f"server overloaded or the model unable to answer in JSON? The "
                            f"{summary.already + summary.written} questions in {out} are kept: fix the cause "
                            "and rerun the same command to go on"
                        )
        except BaseException:
            stop.set()
            executor.shutdown(wait=True, cancel_futures=True)
            raise
        executor.shutdown(wait=True)
    summary.requests, summary.mode = client.requests, client.mode
    return summary


def _warn_mixed(done: dict[str, dict], syn, out: Path) -> None:
    """Say so when the file already holds questions of this style made differently."""
    mine = {"model": str(syn.model), "prompt_hash": prompt_hash(syn.style), "temperature": float(syn.temperature)}
    for record in done.values():
        origin = record.get("provenance")
        if not isinstance(origin, dict) or origin.get("style") != syn.style:
            continue
        differ = [f"{k}={origin.get(k)!r}" for k, v in mine.items() if origin.get(k) != v]
        if differ:
            _warn(
                f"{out} already holds {syn.style} questions made with {', '.join(differ)}; they are kept "
                "and not asked again (use another synth.out for a separate set)"
            )
            return


def summary_line(summary: Summary) -> str:
    parts = [f"wrote {summary.written} questions to {summary.path}"]
    if summary.already:
        parts.append(f"{summary.already} were already there")
    if summary.failed:
        parts.append(f"{len(summary.failed)} failed (rerun to retry them)")
    parts.append(f"{summary.requests} requests, structured output: {summary.mode}")
    return "; ".join(parts)


if __name__ == "__main__":
    from receval.synth_cli import main

    main()
