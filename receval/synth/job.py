"""A synth job: check the config, pick the units, send the requests (threads), append
the records, and say what happened."""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from receval.core import notices, outputs
from receval.run.config import synth_problems
from receval.datasets import LIBRARY, load_sections, questions_path
from receval.core.errors import ConfigError, DatasetError, RecevalError
from receval.clients import failures
from receval.clients.chat import ChatClient, ReplyError, check_key_env, endpoint
from receval.core.progress import Progress, warn
from receval.core.settings import retries_of
from receval.synth.dedup import JACCARD, JUDGED_FROM, QuestionSet, Verdict
from receval.synth.prompts import EMPTY, QA_SCHEMA, build_messages, prompt_hash, validate_reply
from receval.synth.quotes import locate_quotes, sources
from receval.synth.records import QuestionsFile, make_record, record_id
from receval.synth.units import Unit, make_units, pick_partners, select_units

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
    problems += synth_problems(cfg)  # unknown keys, numbers out of range (receval.schema)
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
    replayed: int = 0  # answers read from the cache (receval.clients.calls): sent by an earlier run
    mode: str = ""
    duplicates: int = 0  # replies repeating a question in the set (receval.synth.dedup); asked again
    empty: int = 0  # replies whose question had no words (asked again)
    lost: int = 0  # questions asked for and not written (their unit failed, or every attempt repeated)
    repeats_dropped: int = 0  # of those, questions whose every attempt repeated a kept one
    counts: failures.Counts | None = None  # the one failure rule's counts (receval.clients.failures)


@dataclass
class _Task:
    units: list[Unit]  # the unit, then its partner for multi
    ids: list[str]  # one per n


def make_client(syn) -> ChatClient:
    """The chat client, asking through the cached-call layer (:mod:`receval.clients.calls`):
    a rerun of the same synth replays its answers and sends nothing."""
    root = syn.get("cache_dir") or os.environ.get("RECEVAL_CACHE_DIR", ".cache/receval")
    return ChatClient(
        syn.base_url, syn.model, syn.api_key_env, timeout=syn.timeout, max_retries=retries_of(syn, "synth"),
        backoff=syn.backoff, max_backoff=syn.max_backoff, cache_dir=root,
    )


def generate(cfg, client: ChatClient | None = None, progress: bool | None = None) -> Summary:
    """Write the questions ``cfg.synth`` asks for to ``cfg.synth.out``; see the module doc."""
    check_config(cfg)
    notices.clear()  # this job says what its own answers held
    syn = cfg.synth
    client = client or make_client(syn)
    out = _output_path(cfg)
    sections = load_sections(cfg.dataset)
    all_units = make_units(sections, syn.unit, cfg.chunking)
    if not all_units:
        raise DatasetError("the dataset has no text to write questions about")
    chosen = select_units(all_units, syn.limit, int(syn.seed))
    partners = pick_partners(chosen, all_units, int(syn.seed)) if syn.style == "multi" else {}

    file = QuestionsFile(out)
    done = file.resume(warn=warn)
    job = _Job(cfg, client, file, done, sections, out)
    tasks = job.plan(chosen, partners)
    _warn_mixed(done, syn, out)
    job.reporter = Progress(f"questions from {syn.model}", job.pending_total, progress)
    with file, job.reporter:
        job.run(tasks)
    return job.finish()


def _output_path(cfg) -> Path:
    """``synth.out``, checked: not the dataset's own questions file, not inside what the job reads."""
    syn = cfg.synth
    out = Path(str(syn.out)).expanduser()
    own = questions_path(cfg.dataset)
    if own is not None and own.resolve() == out.resolve():
        raise ConfigError(
            f"synth.out={str(syn.out)!r} is the dataset's own questions file; write synthetic "
            "questions to a file of their own and pass it as dataset.questions"
        )
    reads = [LIBRARY if cfg.dataset.path is None else Path(cfg.dataset.path).expanduser()]
    outputs.check_output(out, protected_dirs=reads, flag="synth.out", existing_ok=True)  # appended to
    return out


class _Job:
    """One generate call's shared state: the threads ask (:meth:`ask`), the loop tallies
    what each task did (:meth:`tally`) and stops on a refusal or failures in a row."""

    def __init__(self, cfg, client: ChatClient, file: QuestionsFile, done: dict[str, dict], sections, out: Path) -> None:
        self.cfg, self.syn, self.client, self.file, self.done = cfg, cfg.synth, client, file, done
        self.out = out
        self.kept = QuestionSet()
        for record in done.values():
            if isinstance(record.get("question"), str):
                self.kept.add(record["question"])
        self.verdict = Verdict(kept=len(self.kept))  # the set judged is the file's, not this rerun's replies alone
        self.by_section = {s.id: s for s in sections}
        self.summary = Summary(path=self.out)
        self.stop = threading.Event()
        self.attempts = 1 + retries_of(self.syn, "synth")  # a reply repeating a kept question is asked again up to this often
        self.pending_total = 0
        self.reporter: Progress | None = None
        self.in_a_row, self.last_reason = 0, ""

    def plan(self, chosen: list[Unit], partners: dict) -> list[_Task]:
        """The tasks still to ask for (the file's records are not asked again)."""
        syn, done, tasks = self.syn, self.done, []
        for unit in chosen:
            units = [unit, partners[unit.id]] if unit.id in partners else [unit]
            ids = [record_id(syn.style, [u.id for u in units], n) for n in range(syn.per_section)]
            self.summary.already += sum(i in done for i in ids)
            if not all(i in done for i in ids):
                tasks.append(_Task(units, ids))
        self.pending_total = sum(sum(i not in done for i in t.ids) for t in tasks)
        return tasks

    def ask(self, task: _Task) -> tuple[int, int, int, str | None]:
        """(questions written, lost to the server, lost to repeats, the server's reason)."""
        done = self.done
        earlier = [done[i]["question"] for i in task.ids if i in done and isinstance(done[i].get("question"), str)]
        shown = sources(task.units, self.by_section)

        def check(reply: dict) -> str | None:
            problem = validate_reply(reply)
            if problem is None:
                return locate_quotes(reply["quotes"], shown)[1]
            if problem.startswith(EMPTY):
                self.verdict.count("empty")
            return problem

        written, lost, repeats = 0, 0, 0
        for n, qid in enumerate(task.ids):
            if qid in done:
                continue
            if self.stop.is_set():
                return written, lost, repeats, None
            try:
                reply, twin = self._distinct_reply(task, earlier, check)
            except ReplyError as error:
                self.reporter.advance(sum(i not in done for i in task.ids[n:]))
                return written, lost + sum(i not in done for i in task.ids[n:]), repeats, error.reason
            self.reporter.advance()
            if twin is not None:
                repeats += 1
                continue
            self.verdict.count("kept")
            spans, _ = locate_quotes(reply["quotes"], shown)
            record = make_record(qid, self.syn.style, task.units, n, reply, self.syn, self.cfg.dataset.name, spans)
            self.file.append(record)
            earlier.append(record["question"])
            written += 1
        return written, lost, repeats, None

    def _distinct_reply(self, task: _Task, earlier: list[str], check) -> tuple[dict, str | None]:
        """One question's reply, asked again while it repeats a kept question; with the kept
        question it still repeats (None when it is new)."""
        syn = self.syn
        repeated: list[str] = []  # kept questions this one repeated: listed as written, so asked for another
        for attempt in range(self.attempts):
            messages = build_messages(syn.style, task.units, earlier + repeated, int(syn.passage_words))
            # the attempt is part of the key: a re-ask is never answered with the repeat it replaces
            answer = self.client.answer(messages, QA_SCHEMA, check, temperature=float(syn.temperature),
                                        seed=int(syn.seed), attempt=attempt)
            reply = answer.reply
            twin = self.kept.claim(" ".join(reply["question"].split()))
            if twin is None:
                break
            self.verdict.count("duplicates", twin)
            repeated.append(twin)
            if self.stop.is_set() or self.verdict.refusal(JUDGED_FROM):
                break
        return reply, twin

    def refuse(self, at_least: int) -> None:
        why = self.verdict.refusal(at_least)
        if why:
            n = len(self.kept)
            where = (
                f"The {n} distinct question{' is' if n == 1 else 's are'} kept in {self.out}; delete it if "
                "they are no good, and rerun" if n else "Nothing was written; rerun"
            )
            raise RecevalError(f"refused the generated questions: {why}. {where} once the model answers properly")

    def run(self, tasks: list[_Task]) -> None:
        """Ask for the tasks on ``synth.concurrency`` threads; stop them all on any error."""
        concurrency = int(self.syn.concurrency)
        executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="synth")
        running: dict[Future, _Task] = {}
        queue = iter(tasks)
        try:
            while True:
                while len(running) < concurrency and not self.stop.is_set():
                    task = next(queue, None)
                    if task is None:
                        break
                    running[executor.submit(self.ask, task)] = task
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = running.pop(future)
                    self.tally(task, *future.result())  # a ServerError stops the job here
        except BaseException:
            self.stop.set()
            executor.shutdown(wait=True, cancel_futures=True)
            raise
        executor.shutdown(wait=True)

    def tally(self, task: _Task, written: int, lost: int, repeats: int, reason: str | None) -> None:
        """Count what one task did; refuse a broken server early, stop after failures in a row."""
        syn, summary = self.syn, self.summary
        summary.written += written
        summary.lost += lost + repeats
        summary.repeats_dropped += repeats
        self.refuse(JUDGED_FROM)  # a broken server is stopped early
        if repeats and not written:
            self.last_reason = f"every reply repeated a question already in the set ({self.attempts} attempts)"
        if reason is None:
            self.in_a_row = 0
            return
        kind = "section" if syn.unit == "section" else "chunk"
        warn(f"skipped {kind} {task.units[0].id!r}: {reason}")
        summary.failed.append((task.units[0].id, reason))
        self.in_a_row, self.last_reason = self.in_a_row + 1, reason
        if syn.max_failures and self.in_a_row >= syn.max_failures:
            raise RecevalError(
                f"stopped after {self.in_a_row} {kind}s failed in a row (last: {self.last_reason}); is the "
                f"server overloaded or the model unable to answer in JSON? The "
                f"{summary.already + summary.written} questions in {self.out} are kept: fix the cause "
                "and rerun the same command to go on"
            )

    def finish(self) -> Summary:
        """The summary, once every task is done: refused or failed by the one failure rule, or returned."""
        client, summary, verdict, out = self.client, self.summary, self.verdict, self.out
        client.calls.note("receval synth")
        notices.say()
        summary.requests, summary.mode, summary.replayed = client.requests, client.mode, client.calls.replayed
        summary.duplicates, summary.empty = verdict.duplicates, verdict.empty
        self.refuse(1)
        summary.counts = failures.Counts(
            step="receval.synth", sent=summary.requests, replayed=summary.replayed, asked=self.pending_total,
            usable=summary.written, failed=summary.lost, last_reason=self.last_reason or None, item="question",
        )
        n = summary.already + summary.written
        failures.check(
            summary.counts, fix="check synth.base_url, synth.model and that the model answers the JSON asked for",
            kept=(f"The {n} questions in {out} are kept; a rerun asks only for the rest" if n else "Nothing was written"),
        )
        if verdict.duplicates:
            warn(
                f"{verdict.duplicates} replies repeated a question already in the set (same words, or word-set "
                f"Jaccard >= {JACCARD}) and were asked again; {summary.repeats_dropped} questions still repeated "
                f"after {self.attempts} attempts and were dropped"
            )
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
            warn(
                f"{out} already holds {syn.style} questions made with {', '.join(differ)}; they are kept "
                "and not asked again (use another synth.out for a separate set)"
            )
            return


def summary_line(summary: Summary) -> str:
    parts = [f"wrote {summary.written} questions to {summary.path}"]
    if summary.already:
        parts.append(f"{summary.already} were already there")
    if summary.duplicates:
        parts.append(f"{summary.duplicates} replies repeated a kept question and were asked again "
                     f"({summary.repeats_dropped} questions dropped)")
    if summary.failed:
        parts.append(f"{len(summary.failed)} units failed (rerun to retry them)")
    if summary.counts is not None:
        parts.append(summary.counts.line())
    parts.append(f"structured output: {summary.mode}")
    return "; ".join(parts)

