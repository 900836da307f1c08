"""Reading recorded RDF streams from TriG / N-Quads files in bounded memory.

A file is cut into *records* (a directive, a default-graph statement, or one
named-graph block) by a small tokenizer that knows where strings, IRIs and
comments are, so one malformed record is rejected with its file, line and column
while every other record goes on. Records are parsed by pyoxigraph in batches;
only a batch that fails is re-parsed record by record to isolate the culprit.

Each named graph is one event; its time comes from a triple
``<g> prov:generatedAtTime T`` in the default graph (or the other configured
time predicates), or, when enabled, from a triple with a time predicate inside
the event graph itself (the ``<g#event>`` proposal of the W3C RSP CG notes).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.time import TimeError, timestamp_from_literal

PROV = "http://www.w3.org/ns/prov#"
TIMEVOCAB = "http://streamreasoning.org/timeVocab#"

POINT_PREDICATES = (PROV + "generatedAtTime", TIMEVOCAB + "startsAtTime")
START_PREDICATES = (PROV + "startedAtTime",)
END_PREDICATES = (PROV + "endedAtTime", TIMEVOCAB + "endsAtTime")


@dataclass
class TimeConfig:
    """Which predicates carry event times and where to look for them."""

    point: tuple[str, ...] = POINT_PREDICATES
    start: tuple[str, ...] = START_PREDICATES
    end: tuple[str, ...] = END_PREDICATES
    in_graph: bool = False  # also read time triples inside the event graph

    @classmethod
    def with_predicate(cls, iri: str, in_graph: bool = False) -> TimeConfig:
        return cls(point=(iri,), start=(), end=(), in_graph=in_graph)

    def role(self, predicate: str) -> str | None:
        if predicate in self.point:
            return "point"
        if predicate in self.start:
            return "start"
        if predicate in self.end:
            return "end"
        return None


# ------------------------------------------------------------------ records

_TOKEN = re.compile(
    # The lookahead lets the scanner skip straight to the characters that can start a token.
    r"(?=[\"'<#{}.])"
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|(?P<open3>"""|\'\'\')'
    r"|<[^>\s]*>"
    r"|#[^\n]*"
    r"|(?P<brace>[{}])"
    r"|(?P<dot>\.(?=[\s#]|\Z))",
    re.S,
)
_DIRECTIVE = re.compile(r"\s*(PREFIX|BASE)\b", re.I)
_AT_DIRECTIVE = re.compile(r"\s*@(prefix|base)\b")


@dataclass(slots=True)
class Record:
    text: str
    line: int  # 1-based line of the record's first character
    column: int  # 1-based column of the record's first character
    directive: bool = False


def _split(text: str, base_line: int, final: bool) -> tuple[list[Record], int, int]:
    """Cut ``text`` into complete records.

    Returns the records, the offset where the unconsumed tail starts, and the
    line number of that offset. A non-final chunk stops early at a long string
    that is not closed yet.
    """
    records: list[Record] = []
    depth = 0
    start = 0
    line = base_line
    counted = 0  # offset up to which newlines have been counted into `line`
    sparql_directive = False
    pos = 0
    n = len(text)

    def skip_ws(i: int) -> int:
        # Whitespace and comments between records belong to no record.
        while i < n:
            if text[i] in " \t\r\n":
                i += 1
            elif text[i] == "#":
                j = text.find("\n", i)
                i = n if j < 0 else j + 1
            else:
                break
        return i

    start = skip_ws(0)
    sparql_directive = bool(_DIRECTIVE.match(text, start))
    pos = start
    for m in _TOKEN.finditer(text, pos):
        if m.group("open3") is not None:
            if not final:
                break
            continue
        tok_end = m.end()
        end_record = False
        if m.group("brace") == "{":
            depth += 1
        elif m.group("brace") == "}":
            depth -= 1
            end_record = depth <= 0
        elif m.group("dot") is not None and depth <= 0:
            end_record = True
        elif sparql_directive and m.group(0).startswith("<") and depth <= 0:
            end_record = True
        if not end_record:
            continue
        line += text.count("\n", counted, start)
        counted = start
        col = start - (text.rfind("\n", 0, start) + 1) + 1
        rec_text = text[start:tok_end]
        directive = sparql_directive or bool(_AT_DIRECTIVE.match(rec_text))
        records.append(Record(rec_text, line, col, directive))
        depth = 0
        start = skip_ws(tok_end)
        sparql_directive = bool(_DIRECTIVE.match(text, start))
    else:
        if final and text[start:].strip():
            # Trailing text that never closed: one malformed record.
            line += text.count("\n", counted, start)
            counted = start
            col = start - (text.rfind("\n", 0, start) + 1) + 1
            records.append(Record(text[start:], line, col))
            start = n
    line += text.count("\n", counted, start)
    return records, start, line


def iter_records(path: Path, chunk_size: int = 1 << 22) -> Iterator[Record]:
    """Yield the records of a TriG file, reading it chunk by chunk."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        tail = ""
        line = 1
        while True:
            chunk = f.read(chunk_size)
            final = not chunk
            if not final:
                # Cut chunks at line ends so one-line tokens are never split.
                rest = f.readline()
                chunk += rest
            text = tail + chunk
            records, consumed, line = _split(text, line, final)
            yield from records
            tail = text[consumed:]
            if final:
                return
            if not records and len(tail) > 64 * chunk_size:
                # One record larger than 256 MiB: refuse instead of buffering forever.
                raise ValueError(f"{path}:{line}: a single record exceeds {64 * chunk_size} bytes")


def iter_nquads_records(path: Path) -> Iterator[Record]:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for i, raw in enumerate(f, 1):
            s = raw.strip()
            if s and not s.startswith("#"):
                yield Record(raw, i, 1)


# ------------------------------------------------------------------ parsing

_ERR_POS = re.compile(r"line (\d+) (?:column|between columns) (\d+)")
_ERR_POS2 = re.compile(r"at (\d+):(\d+)")


def _error_position(err: SyntaxError) -> tuple[int, int]:
    msg = str(err)
    m = _ERR_POS.search(msg) or _ERR_POS2.search(msg)
    if m:
        return int(m.group(1)), int(m.group(2))
    return getattr(err, "lineno", 0) or 0, getattr(err, "offset", 0) or 0


def _clean_error(err: SyntaxError) -> str:
    msg = str(err)
    msg = re.sub(r"^Parser error at line \d+ (?:column \d+|between columns \d+ and \d+): ", "", msg)
    msg = re.sub(r"\s*\(line \d+\)\s*$", "", msg)
    return msg


@dataclass
class _Open:
    """An event graph being assembled: content and time may come in any order."""

    name: str
    triples: list[ox.Triple] = field(default_factory=list)
    complete: bool = False
    point: object | None = None
    start: object | None = None
    end: object | None = None
    line: int = 0
    time_error: str | None = None
    time_line: int = 0


class StreamFile:
    """Events of one recorded stream file, in file order, plus rejected records.

    Iterating yields ``Event`` and ``Rejected`` objects; the caller (the merge
    layer) applies ordering policies across events.
    """

    def __init__(
        self,
        path: str | Path,
        stream: str,
        *,
        time: TimeConfig | None = None,
        fmt: str | None = None,
        max_pending: int = 10_000,
        batch_records: int = 512,
    ) -> None:
        self.path = Path(path)
        self.stream = stream
        self.time = time or TimeConfig()
        suffix = self.path.suffix.lower()
        self.fmt = fmt or ("nquads" if suffix in (".nq", ".nquads") else "trig")
        self.max_pending = max_pending
        self.batch_records = batch_records
        self._prefix_text = ""
        self._prefix_lines = 0
        self._base: str | None = None
        self._events = 0

    # -- parsing of record batches

    def _parse_text(self, text: str) -> list[ox.Quad]:
        fmt = ox.RdfFormat.N_QUADS if self.fmt == "nquads" else ox.RdfFormat.TRIG
        return list(ox.parse(text, format=fmt, base_iri=self._base))

    def _parse_batch(self, batch: list[Record]) -> Iterator[tuple[Record | None, list[ox.Quad] | Rejected]]:
        header = "" if self.fmt == "nquads" else self._prefix_text
        body = "\n".join(r.text for r in batch)
        try:
            yield None, self._parse_text(header + "\n" + body if header else body)
            return
        except SyntaxError:
            pass
        for r in batch:
            try:
                yield r, self._parse_text(header + "\n" + r.text if header else r.text)
            except SyntaxError as e:
                el, ec = _error_position(e)
                hl = (self._prefix_lines + 1) if header else 0
                line = r.line + max(el - 1 - hl, 0)
                col = ec + (r.column - 1 if el - hl == 1 else 0)
                snippet = r.text.strip().splitlines()[0][:200] if r.text.strip() else ""
                yield r, Rejected(self.stream, str(self.path), line, col, _clean_error(e), snippet)

    def _directive(self, r: Record) -> Rejected | None:
        try:
            self._parse_text(self._prefix_text + "\n" + r.text)
        except SyntaxError as e:
            el, ec = _error_position(e)
            return Rejected(self.stream, str(self.path), r.line, ec, _clean_error(e), r.text.strip())
        self._prefix_text += "\n" + r.text.strip()
        self._prefix_lines = self._prefix_text.count("\n")
        if re.match(r"\s*@?base\b", r.text, re.I):
            m = re.search(r"<([^>]*)>", r.text)
            if m:
                self._base = m.group(1) or None
        return None

    def _records(self) -> Iterator[Record]:
        if self.fmt == "nquads":
            return iter_nquads_records(self.path)
        return iter_records(self.path)

    # -- assembly of events

    def __iter__(self) -> Iterator[Event | Rejected]:
        opened: OrderedDict[str, _Open] = OrderedDict()
        orphan_meta: dict[str, int] = {}
        current: _Open | None = None  # N-Quads: the graph whose run is in progress

        def get(name: str, line: int) -> _Open:
            o = opened.get(name)
            if o is None:
                o = opened[name] = _Open(name, line=line)
            return o

        def finish(o: _Open) -> Iterator[Event | Rejected]:
            if not o.complete:
                return
            if o.time_error:
                del opened[o.name]
                yield Rejected(self.stream, str(self.path), o.time_line, 0, o.time_error, o.name)
                return
            if o.point is None and o.start is None and o.end is None:
                return  # wait for its time
            del opened[o.name]
            yield from self._make_event(o)

        def flush_overflow() -> Iterator[Event | Rejected]:
            while len(opened) > self.max_pending:
                name, o = next(iter(opened.items()))
                del opened[name]
                yield Rejected(
                    self.stream, str(self.path), o.line, 0,
                    f"event graph <{name}> has no timestamp within the next {self.max_pending} "
                    "events (expected <g> prov:generatedAtTime T in the default graph)",
                    name,
                )

        batch: list[Record] = []

        def run_batch() -> Iterator[Event | Rejected]:
            nonlocal current
            for rec, result in self._parse_batch(batch):
                if isinstance(result, Rejected):
                    yield result
                    continue
                if rec is not None:
                    lines = None
                    line = rec.line
                else:
                    lines = _block_lines(batch)
                    line = batch[0].line
                for q in result:
                    g = q.graph_name
                    if isinstance(g, ox.DefaultGraph):
                        role = self.time.role(q.predicate.value)
                        subj = q.subject.value if isinstance(q.subject, (ox.NamedNode, ox.BlankNode)) else None
                        if role and subj is not None:
                            o = get(subj, line)
                            self._set_time(o, role, q.object, line)
                            yield from finish(o)
                        else:
                            orphan_meta.setdefault(str(q), line)
                        continue
                    name = g.value
                    if self.fmt == "nquads" and current is not None and current.name != name:
                        current.complete = True
                        yield from finish(current)
                    o = get(name, lines.get(name, line) if lines else line)
                    o.triples.append(q.triple)
                    if self.time.in_graph:
                        role = self.time.role(q.predicate.value)
                        if role:
                            self._set_time(o, role, q.object, line)
                    current = o
                if self.fmt == "trig":
                    # In TriG a block is complete when its record is.
                    for o in list(opened.values()):
                        if o.triples and not o.complete:
                            o.complete = True
                            yield from finish(o)
                yield from flush_overflow()
            batch.clear()

        for rec in self._records():
            if rec.directive:
                if batch:
                    yield from run_batch()
                rej = self._directive(rec)
                if rej:
                    yield rej
                continue
            batch.append(rec)
            if len(batch) >= self.batch_records:
                yield from run_batch()
        if batch:
            yield from run_batch()
        if current is not None and current.name in opened:
            current.complete = True
            yield from finish(current)
        for o in list(opened.values()):
            if o.name not in opened:
                continue
            del opened[o.name]
            if not o.triples:
                # Time metadata about a graph that never came.
                yield Rejected(
                    self.stream, str(self.path), o.line, 0,
                    f"timestamp given for <{o.name}>, but the file has no graph of that name", o.name,
                )
            elif o.time_error:
                yield Rejected(self.stream, str(self.path), o.time_line, 0, o.time_error, o.name)
            else:
                yield Rejected(
                    self.stream, str(self.path), o.line, 0,
                    f"event graph <{o.name}> has no timestamp (expected <{o.name}> "
                    f"<{self.time.point[0] if self.time.point else PROV + 'generatedAtTime'}> T "
                    "in the default graph)",
                    o.name,
                )
        for text, line in orphan_meta.items():
            yield Rejected(
                self.stream, str(self.path), line, 0,
                "default-graph triple is not stream metadata (no time predicate about an event graph)",
                text,
            )

    def _set_time(self, o: _Open, role: str, obj: object, line: int) -> None:
        if not isinstance(obj, ox.Literal):
            o.time_error = f"time of <{o.name}> is not a literal: {obj}"
            o.time_line = line
            return
        try:
            ts = timestamp_from_literal(obj.value, obj.datatype.value if obj.datatype else None)
        except TimeError as e:
            o.time_error = f"bad timestamp for <{o.name}>: {e}"
            o.time_line = line
            return
        setattr(o, role, ts)

    def _make_event(self, o: _Open) -> Iterator[Event | Rejected]:
        if o.point is not None:
            start = end = o.point
        else:
            start = o.start if o.start is not None else o.end
            end = o.end if o.end is not None else o.start
        kinds = {start.kind, end.kind}
        if len(kinds) > 1:
            yield Rejected(self.stream, str(self.path), o.line, 0,
                           f"<{o.name}> mixes dateTime and integer times", o.name)
            return
        if end.value < start.value:
            yield Rejected(self.stream, str(self.path), o.line, 0,
                           f"interval of <{o.name}> ends before it starts", o.name)
            return
        self._events += 1
        triples = o.triples
        if any(isinstance(t.subject, ox.BlankNode) or isinstance(t.object, ox.BlankNode) for t in triples):
            triples = scope_blank_nodes(triples, f"e{self._events}")
        yield Event(
            stream=self.stream,
            graph=o.name,
            start=start.value,
            end=end.value,
            triples=tuple(triples),
            kind=start.kind,
            origin=f"{self.path}:{o.line}",
        )


_BLOCK_NAME = re.compile(r"\s*(?:GRAPH\s+)?<([^>]*)>\s*\{", re.I)


def _block_lines(batch: list[Record]) -> dict[str, int]:
    """Lines of the graph blocks in a batch, for messages about their events."""
    out: dict[str, int] = {}
    for r in batch:
        m = _BLOCK_NAME.match(r.text)
        if m:
            out.setdefault(m.group(1), r.line)
    return out


def scope_blank_nodes(triples: list[ox.Triple], suffix: str) -> list[ox.Triple]:
    """Give an event's blank nodes labels of their own: they are scoped to the event."""

    def fix(t):
        return ox.BlankNode(f"{t.value}_{suffix}") if isinstance(t, ox.BlankNode) else t

    out = []
    for t in triples:
        if isinstance(t.subject, ox.BlankNode) or isinstance(t.object, ox.BlankNode):
            t = ox.Triple(fix(t.subject), t.predicate, fix(t.object))
        out.append(t)
    return out
