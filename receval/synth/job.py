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
    out = Path(str(syn.out)).expanduser()
    own = questions_path(cfg.dataset)
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
    done = file.resume(warn=warn)
    kept = QuestionSet()
    for record in done.values():
        if isinstance(record.get("question"), str):
            kept.add(record["question"])
    verdict = Verdict(kept=len(kept))  # the set judged is the file's, not this rerun's replies alone
    by_section = {s.id: s for s in sections}
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
    pending_total = sum(sum(i not in done for i in t.ids) for t in tasks)
    reporter = Progress(f"questions from {syn.model}", pending_total, progress)

    attempts = 1 + retries_of(syn, "synth")  # a reply repeating a kept question is asked again up to this often

    def work(task: _Task) -> tuple[int, int, int, str | None]:
        """(questions written, lost to the server, lost to repeats, the server's reason)."""
        earlier = [done[i]["question"] for i in task.ids if i in done and isinstance(done[i].get("question"), str)]
        shown = sources(task.units, by_section)

        def check(reply: dict) -> str | None:
            problem = validate_reply(reply)
            if problem is None:
                return locate_quotes(reply["quotes"], shown)[1]
            if problem.startswith(EMPTY):
                verdict.count("empty")
            return problem

        written, lost, repeats = 0, 0, 0
        for n, qid in enumerate(task.ids):
            if qid in done:
                continue
            if stop.is_set():
                return written, lost, repeats, None
            repeated: list[str] = []  # kept questions this one repeated: listed as written, so asked for another
            for attempt in range(attempts):
                messages = build_messages(syn.style, task.units, earlier + repeated, int(syn.passage_words))
                try:  # the attempt is part of the key: a re-ask is never answered with the repeat it replaces
                    answer = client.answer(messages, QA_SCHEMA, check, temperature=float(syn.temperature),
                                           seed=int(syn.seed), attempt=attempt)
                    reply = answer.reply
                except ReplyError as error:
                    reporter.advance(sum(i not in done for i in task.ids[n:]))
                    return written, lost + sum(i not in done for i in task.ids[n:]), repeats, error.reason
                twin = kept.claim(" ".join(reply["question"].split()))
                if twin is None:
                    break
                verdict.count("duplicates", twin)
                repeated.append(twin)
                if stop.is_set() or verdict.refusal(JUDGED_FROM):
                    break
            reporter.advance()
            if twin is not None:
                repeats += 1
                continue
            verdict.count("kept")
            spans, _ = locate_quotes(reply["quotes"], shown)
            record = make_record(qid, syn.style, task.units, n, reply, syn, cfg.dataset.name, spans)
            file.append(record)
            earlier.append(record["question"])
            written += 1
        return written, lost, repeats, None

    def refuse(at_least: int) -> None:
        why = verdict.refusal(at_least)
        if why:
            n = len(kept)
            where = (
                f"The {n} distinct question{' is' if n == 1 else 's are'} kept in {out}; delete it if "
                "they are no good, and rerun" if n else "Nothing was written; rerun"
            )
            raise RecevalError(f"refused the generated questions: {why}. {where} once the model answers properly")

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
                    written, lost, repeats, reason = future.result()  # a ServerError stops the job here
                    summary.written += written
                    summary.lost += lost + repeats
                    summary.repeats_dropped += repeats
                    refuse(JUDGED_FROM)  # a broken server is stopped early
                    if repeats and not written:
                        last_reason = f"every reply repeated a question already in the set ({attempts} attempts)"
                    if reason is None:
                        in_a_row = 0
                        continue
                    kind = "section" if syn.unit == "section" else "chunk"
                    warn(f"skipped {kind} {task.units[0].id!r}: {reason}")
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
    client.calls.note("receval synth")
    notices.say()
    summary.requests, summary.mode, summary.replayed = client.requests, client.mode, client.calls.replayed
    summary.duplicates, summary.empty = verdict.duplicates, verdict.empty
    refuse(1)
    summary.counts = failures.Counts(
        step="receval.synth", sent=summary.requests, replayed=summary.replayed, asked=pending_total,
        usable=summary.written, failed=summary.lost, last_reason=last_reason or None, item="question",
    )
    n = summary.already + summary.written
    failures.check(
        summary.counts, fix="check synth.base_url, synth.model and that the model answers the JSON asked for",
        kept=(f"The {n} questions in {out} are kept; a rerun asks only for the rest" if n else "Nothing was written"),
    )
    if verdict.duplicates:
        warn(
            f"{verdict.duplicates} replies repeated a question already in the set (same words, or word-set "
            f"Jaccard >= {JACCARD}) and were asked again; {summary.repeats_dropped} questions still repeated after "
            f"{attempts} attempts and were dropped"
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

