"""The questions file: record ids, splits and provenance, appended one fsync'ed line
at a time and read back to resume."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from receval.core.errors import ConfigError, DatasetError
from receval.synth.prompts import prompt_hash
from receval.synth.units import Unit



def record_id(style: str, unit_ids: list[str], n: int) -> str:
    key = "\0".join([*unit_ids, str(n)])
    return f"syn-{style}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def split_of(question_id: str, dev_fraction: float) -> str:
    """``dev`` or ``test``, from the id's hash: stable whatever else is in the file."""
    share = int(hashlib.sha256(question_id.encode("utf-8")).hexdigest()[:8], 16) / 16**8
    return "dev" if share < dev_fraction else "test"


def make_record(
    qid: str, style: str, units: list[Unit], n: int, reply: dict, syn, dataset_name: str, spans: list[dict]
) -> dict:
    """One line of the file. ``spans``: where the answer is, the reply's quotes found in
    the passage (:func:`receval.synth.quotes.locate_quotes`); the passages it was
    written from stay in ``provenance.source.spans``."""
    texts = "\0".join(u.text for u in units)
    relevant = list(dict.fromkeys(u.section_id for u in units))
    record = {
        "id": qid,
        "kind": style,
        "question": " ".join(reply["question"].split()),
        "relevant": relevant,
        "spans": spans,  # the question is scored against its quotes, not its whole unit or section
        "split": split_of(qid, float(syn.dev_fraction)),
        "answer": reply["answer"].strip(),
        "quotes": [" ".join(quote.split()) for quote in reply["quotes"]],
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
                "spans": [{"page": u.page, "start": u.start, "end": u.end} for u in units if 0 <= u.start < u.end],
                "n": n,
                "text_sha256": hashlib.sha256(texts.encode("utf-8")).hexdigest()[:16],
            },
        },
    }
    if not spans:  # offsets not known: labelled by its sections alone
        del record["spans"]
    return record


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
        """Open for appending; what this creates (the file, missing folders) is removed
        again on exit when no line was written, so a job that fails before its first
        reply (a refused key, an unreachable server) leaves no empty file behind."""
        made = [p for p in [self.path.parent, *self.path.parent.parents] if not p.exists()]
        created = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "ab")
        except OSError as error:
            self._remove(made, False)
            raise ConfigError(f"synth.out={str(self.path)!r}: cannot write there ({error.strerror})") from None
        self._made, self._created, self._written = made, created, 0
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            if not self._written:
                self._remove(self._made, self._created)

    def _remove(self, folders: list[Path], file: bool) -> None:
        """Undo what ``__enter__`` made: the (empty) file, then the folders, innermost first."""
        try:
            if file and self.path.stat().st_size == 0:
                self.path.unlink()
            for folder in folders:
                folder.rmdir()
        except OSError:
            pass  # not empty or not ours any more: leave it

    def append(self, record: dict) -> None:
        """One whole line, flushed and fsync'ed before returning."""
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._written += 1


def _parse_line(raw: bytes) -> tuple[dict | None, str]:
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, "not a valid JSON line"
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not record["id"]:
        return None, "not a JSON object with a string 'id'"
    return record, ""

