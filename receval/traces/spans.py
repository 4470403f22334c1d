"""Reading OpenInference retriever spans, one JSON object per line.

A line is one span as OpenTelemetry exporters write it. Its attributes may be flat
(``"retrieval.documents.0.document.id": "fines#late-returns"``, as the console and
Phoenix exports give them), nested (``{"retrieval": {"documents": [{"document": {"id":
...}}]}}``) or an OTLP list (``[{"key": ..., "value": {"stringValue": ...}}]``); they
are flattened to dotted keys, list positions as numbers. Read from a span:

- ``openinference.span.kind``: only ``RETRIEVER`` spans are kept (a span without the
  attribute is kept when it has documents); others are counted and skipped;
- the trace (``context.trace_id``, ``trace_id`` or ``traceId``; a span without one is
  its own trace), the span's id (``context.span_id``, ``span_id`` or ``spanId``) and
  start/end times (``start_time``/``end_time`` as ISO 8601 text or nanoseconds,
  ``startTimeUnixNano``/``endTimeUnixNano``), from 1970 to 2262 (what 64-bit
  nanoseconds hold) and at most :data:`MAX_SPAN_MS` apart;
- ``input.value``: the query; ``receval.question_id``: the question, when the
  application set it;
- ``retrieval.documents.N.document.id`` / ``.score`` / ``.content``: the documents in
  rank order (N).

A line that is not a JSON object, a retriever span without times, a time out of range,
an end before its start, a span lasting more than a day, a document without an id or
with a score that is not a number are errors naming the file and line.

A span read twice (the same trace and span id, or, without ids, the same trace, times,
query and documents: an exporter that retried, files concatenated twice) is kept once
and counted; the same ids with other content is an error naming both lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from receval.core import numeric
from receval.core.errors import RecevalError
from receval.core.secrets import brief, cut

KIND = "openinference.span.kind"
RETRIEVER = "RETRIEVER"
QUERY = "input.value"
QUESTION_ID = "receval.question_id"
_DOCUMENT = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content)$")
_OTLP_VALUES = ("stringValue", "doubleValue", "intValue", "boolValue")
MAX_NS = 2**63 - 1  # the latest time 64-bit nanoseconds hold (2262)
MAX_SPAN_MS = 86_400_000  # a day: a retriever call that lasted longer is a time in the wrong unit


@dataclass(frozen=True)
class Document:
    id: str
    score: float | None
    content: str | None


@dataclass(frozen=True)
class Span:
    """One retriever span: where it was read (``line``), its trace, times in ns, the
    question id the application gave (or None), its query and its documents in rank order."""

    line: int
    trace: str
    span_id: str | None
    start_ns: int
    end_ns: int
    question_id: str | None
    query: str
    documents: tuple[Document, ...]

    @property
    def latency_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def flatten(value, prefix: str = "") -> dict:
    """Nested attributes (mappings, lists, OTLP key/value lists) as dotted keys."""
    if isinstance(value, list) and all(isinstance(v, dict) and "key" in v and "value" in v for v in value) and value:
        return {k: v for item in value for k, v in flatten(_otlp(item["value"]), f"{prefix}{item['key']}.").items()}
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}{key}."))
        return out
    if isinstance(value, list):
        out = {}
        for i, inner in enumerate(value):
            out.update(flatten(inner, f"{prefix}{i}."))
        return out
    return {prefix[:-1]: value}


def _otlp(value):
    """An OTLP ``AnyValue`` as a plain value."""
    if isinstance(value, dict):
        for key in _OTLP_VALUES:
            if key in value:
                return int(value[key]) if key == "intValue" else value[key]
        if "arrayValue" in value:
            return [_otlp(v) for v in value["arrayValue"].get("values", [])]
        if "kvlistValue" in value:
            return {item["key"]: _otlp(item["value"]) for item in value["kvlistValue"].get("values", [])}
    return value


def _ns(value, where: str, name: str) -> int:
    """A time as nanoseconds since the epoch (from 0 to :data:`MAX_NS`): a number of ns,
    digits, or ISO 8601 text."""
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 30:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_NS:
            raise RecevalError(
                f"{where}: {name} is {value:.3g} ns, not a time a span can have (nanoseconds since 1970, before 2262)"
            )
        return value
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if when.tzinfo is None:
                raise RecevalError(f"{where}: {name} {cut(brief(value))} has no time zone; give UTC (…Z)")
            seconds = int(when.timestamp())
            return seconds * 1_000_000_000 + when.microsecond * 1000
    raise RecevalError(f"{where}: {name} is {cut(brief(value))}, not a time (ISO 8601 text or nanoseconds)")


def _first(data: dict, *names: str):
    for name in names:
        value = data
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def read_spans(path: str | Path) -> tuple[list[Span], int, int]:
    """The retriever spans of the file, in file order, each once; how many other spans it
    held; how many spans repeated one read before (left out)."""
    path = Path(path)
    spans, others, repeated = [], 0, 0
    first: dict[tuple, Span] = {}  # a span's identity -> the span read first
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            where = f"{path}, line {number}"
            try:
                data = json.loads(text)
            except ValueError as error:
                raise RecevalError(
                    f"{where}: not JSON ({getattr(error, 'msg', error)}); give one span as a JSON object per line"
                ) from None
            except RecursionError:
                raise RecevalError(f"{where}: JSON nested too deep to read; give one span as a JSON object per line") from None
            if not isinstance(data, dict):
                raise RecevalError(f"{where}: a {type(data).__name__}, not a span (a JSON object)")
            span = _span(data, number, where)
            if span is None:
                others += 1
                continue
            traced = span.trace if span.trace != f"line {number}" else None  # a span without a trace is its own
            key = (traced, span.span_id) if span.span_id is not None else (traced, *_content(span))
            seen = first.setdefault(key, span)
            if seen is span:
                spans.append(span)
                continue
            if _content(seen) != _content(span):
                raise RecevalError(
                    f"{where}: span {cut(str(span.span_id))} of trace {cut(span.trace)} was read at line {seen.line} "
                    "with other times, query or documents; give each span once"
                )
            repeated += 1
    return spans, others, repeated


def _content(span: Span) -> tuple:
    """What a span says: its times, question id, query and documents."""
    return (span.start_ns, span.end_ns, span.question_id, span.query, span.documents)


def _span(data: dict, number: int, where: str) -> Span | None:
    attributes = flatten(data.get("attributes") or {})
    kind = attributes.get(KIND)
    documents: dict[int, dict] = {}
    for key, value in attributes.items():
        match = _DOCUMENT.match(key)
        if match:
            documents.setdefault(int(match[1]), {})[match[2]] = value
    if (kind is not None and str(kind).upper() != RETRIEVER) or (kind is None and not documents):
        return None
    start, end = _first(data, "start_time", "startTimeUnixNano"), _first(data, "end_time", "endTimeUnixNano")
    if start is None or end is None:
        raise RecevalError(
            f"{where}: a retriever span without start_time and end_time; its latency is their difference"
        )
    start_ns, end_ns = _ns(start, where, "start_time"), _ns(end, where, "end_time")
    if end_ns < start_ns:
        raise RecevalError(f"{where}: end_time is before start_time")
    if end_ns - start_ns > MAX_SPAN_MS * 1_000_000:
        raise RecevalError(
            f"{where}: the span lasts {(end_ns - start_ns) / 3.6e12:,.1f} hours; a retriever call lasts at most a "
            "day: give its times in nanoseconds (or ISO 8601 text)"
        )
    trace = _first(data, "context.trace_id", "trace_id", "traceId")
    span_id = _first(data, "context.span_id", "span_id", "spanId")
    docs = []
    for position in sorted(documents):
        doc = documents[position]
        if doc.get("id") is None:
            raise RecevalError(f"{where}: retrieval.documents.{position} has no document.id")
        score = doc.get("score")
        if score is not None and numeric.real(score) is None:
            raise RecevalError(
                f"{where}: retrieval.documents.{position}.document.score is {cut(brief(score))}, not a finite number"
            )
        content = doc.get("content")
        docs.append(Document(str(doc["id"]), None if score is None else float(score),
                             None if content is None else str(content)))
    question_id = attributes.get(QUESTION_ID)
    query = attributes.get(QUERY)
    return Span(
        line=number, trace=str(trace) if trace is not None else f"line {number}",
        span_id=None if span_id is None else str(span_id), start_ns=start_ns, end_ns=end_ns,
        question_id=None if question_id is None else str(question_id),
        query="" if query is None else str(query), documents=tuple(docs),
    )
