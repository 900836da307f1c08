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

import gc
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, groupby, repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import cast

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.time import XSD, TimeError, TimeKind, timestamp_from_literal

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

TOKEN = re.compile(
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


def split_records(text: str, base_line: int, final: bool) -> tuple[list[Record], int, int]:
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
    for m in TOKEN.finditer(text, pos):
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
            records, consumed, line = split_records(text, line, final)
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


_GRAPH = attrgetter("graph_name")
_TRIPLE = attrgetter("triple")
_SUBJECT = attrgetter("subject")
_PREDICATE = attrgetter("predicate")
_OBJECT = attrgetter("object")
_DATATYPE = attrgetter("datatype")
_VALUE = attrgetter("value")
_FIRST = itemgetter(0)
_ITEMS = itemgetter(1)
_DEFAULT = ox.DefaultGraph
_LITERAL = ox.Literal
_NAMED = ox.NamedNode
_ABSTRACT = TimeKind.ABSTRACT
_BLANK = ox.BlankNode
_XSD_INTEGER = XSD + "integer"
_NAME_ABOVE_BRACE = re.compile(r"\n[ \t\r\n]*\{")  # a graph name on a line before its "{"
_BLANK_LABEL = re.compile("_:")  # the regex engine finds it faster than str's "in"
_LBRACE = re.compile(r"\{")
_RBRACE = re.compile(r"\}")
# An empty graph block "<g> { }" (an event with no triples: a heartbeat that advances
# time) parses to no quad at all: a marker triple put into it before parsing (on the
# line of its "{": lines stay) keeps the graph's run, and is taken out again.
_EMPTY_BLOCK = re.compile(r"\{((?:[ \t\r\n]|#[^\n]*\n)*)\}")
_EMPTY_RECORD = re.compile(r"\{(?:[ \t\r\n]|#[^\n]*\n)*\}\s*\Z")
_MARK = ox.NamedNode("urn:rsep:empty-graph")
_MARK_TRIPLE = ox.Triple(_MARK, _MARK, _MARK)
_MARK_TEXT = "<urn:rsep:empty-graph> <urn:rsep:empty-graph> <urn:rsep:empty-graph> ."

# A run of consecutive parsed quads of one graph, (graph, content): a default-graph run keeps
# its quads (time metadata), a named graph's run the triples of its event.
Run = tuple[ox.NamedNode | ox.BlankNode | ox.DefaultGraph, list[ox.Quad] | tuple[ox.Triple, ...]]


def _mark_empty(text: str) -> str:
    return _EMPTY_BLOCK.sub(lambda m: "{" + _MARK_TEXT + m.group(1) + "}", text)


def _unmark(groups: list[Run]) -> list[Run]:
    """Parsed runs without the marker: an empty graph's run holds no triple, and an
    empty unnamed block leaves nothing."""
    out: list[Run] = []
    for g, items in groups:
        if g.__class__ is _DEFAULT:
            quads = [q for q in cast("list[ox.Quad]", items) if q.subject != _MARK]
            if quads:
                out.append((g, quads))
        else:
            out.append((g, tuple(t for t in cast("tuple[ox.Triple, ...]", items) if t != _MARK_TRIPLE)))
    return out


# Whitespace, comments and directives before a default-graph statement.
_NOT_NAME = frozenset(" \t\r\n#@PpBb")  # may start whitespace, a comment or a directive
_SKIP = re.compile(
    r"(?:[ \t\r\n]+|#[^\n]*|@(?:prefix|base)\b[^>]*>\s*\.|(?i:prefix|base)\b[^>]*>)*"
)


class _Open:
    """An event graph being assembled: content and time may come in any order."""

    __slots__ = ("name", "line", "triples", "complete", "point", "start", "end",
                 "time_error", "time_line", "bnodes")

    def __init__(self, name: str, line: int, triples: tuple[ox.Triple, ...] = ()) -> None:
        self.name = name
        self.line = line
        self.triples = triples
        self.complete = False
        self.point: tuple[int, TimeKind] | None = None
        self.start: tuple[int, TimeKind] | None = None
        self.end: tuple[int, TimeKind] | None = None
        self.time_error: str | None = None
        self.time_line = 0
        self.bnodes = False


class _Assembly:
    """Turns parsed quads into events, whichever path parsed them.

    A run of consecutive quads of one named graph (default-graph statements in
    between do not end it) is one event's content; it is complete when a quad of
    another named graph follows, or at the end of the file. Emitted items are
    collected in ``out`` for the reader to yield.
    """

    def __init__(self, sf: StreamFile) -> None:
        self.stream = sf.stream
        self.origin = str(sf.path)
        self.time = sf.time
        self.max_pending = sf.max_pending
        roles: dict[str, str] = {}
        # The same precedence as TimeConfig.role: point, then start, then end.
        for role, preds in (("end", sf.time.end), ("start", sf.time.start), ("point", sf.time.point)):
            roles.update(dict.fromkeys(preds, role))
        self.roles = roles
        self.point_predicates = frozenset(p for p, r in roles.items() if r == "point")
        self.in_graph = sf.time.in_graph
        self.opened: dict[str, _Open] = {}
        self.orphans: dict[str, int] = {}
        self.current: _Open | None = None
        self.out: list[Event | Rejected] = []
        self.events = 0
        self.bnodes = True  # False when the text being assembled cannot hold blank nodes
        self.marked = False  # True once a record's empty graph block holds the marker triple

    def points(self, groups: list[Run], lines: list[int]) -> bool:
        """Assemble a chunk of the common shape in bulk; False (and nothing done) for any other.

        The shape: runs alternate between one default-graph quad ``<g> <point predicate>
        "n"^^xsd:integer`` and the triples of that graph ``<g>``, a graph not seen before,
        without blank nodes. ``lines`` holds the line of each graph run. The checks and
        conversions map over the whole chunk at once instead of stepping through it run
        by run; the result is what ``runs`` would make of it.
        """
        if self.bnodes or self.in_graph or len(groups) % 2 or not groups:
            return False
        graphs, items = zip(*groups, strict=True)
        nodes = graphs[1::2]
        if set(map(type, graphs[::2])) != {_DEFAULT} or set(map(type, nodes)) != {_NAMED}:
            return False
        times = items[::2]
        if set(map(len, times)) != {1}:
            return False
        # Each time triple is about the graph that follows it, with a point predicate ...
        quads = list(map(_FIRST, times))
        if tuple(map(_SUBJECT, quads)) != nodes \
                or not self.point_predicates.issuperset(map(_VALUE, map(_PREDICATE, quads))):
            return False
        # ... and an xsd:integer in ASCII digits (what runs reads without timestamp_from_literal).
        objects = list(map(_OBJECT, quads))
        if set(map(type, objects)) != {_LITERAL} \
                or set(map(_VALUE, map(_DATATYPE, objects))) != {_XSD_INTEGER}:
            return False
        lexicals = list(map(_VALUE, objects))
        digits = "".join(lexicals)
        if not (all(lexicals) and digits.isascii() and digits.isdigit()):
            return False
        # Only new graphs: none repeats, none has a time or content waiting.
        names = list(map(_VALUE, nodes))
        opened = self.opened
        cur = self.current
        if len(set(names)) != len(names) or not opened.keys().isdisjoint(names):
            return False
        # The event left open by the chunk before must be one runs finishes without finish().
        if cur is not None and (cur.point is None or cur.time_error is not None or cur.bnodes
                                or opened.get(cur.name) is not cur):
            return False
        # runs checks for overflow after each graph run, when the open events are the ones
        # before the chunk (less the current one, finished) plus the graph just read.
        if len(opened) - (cur is not None) + 1 > self.max_pending:
            return False
        stream = self.stream
        out = self.out
        if cur is not None:
            del opened[cur.name]
            self.events += 1
            point = cur.point
            assert point is not None  # (checked above)
            out.append(Event(stream, cur.name, point[0], point[0], cur.triples, point[1], 0,
                             f"{self.origin}:{cur.line}"))
        # Each graph's event is complete when the next graph starts; the last one stays open.
        ints = list(map(int, lexicals))
        triples = items[1::2]
        last = len(names) - 1
        origin = self.origin
        origins = [f"{origin}:{n}" for n in lines[:last]]
        out += map(Event, repeat(stream, last), names, ints, ints, triples, repeat(_ABSTRACT, last),
                   repeat(0, last), origins)
        self.events += last
        o = opened[names[last]] = _Open(names[last], lines[last], triples[last])
        o.point = (ints[last], _ABSTRACT)
        self.current = o
        return True

    def runs(self, groups: list[Run], lines: list[int], step: bool = False) -> None:
        """Assemble parsed quads grouped into runs of one graph, with the line of each run.

        A named graph's run holds its triples, a default-graph run its quads;
        ``step``: a default-graph run's quads are on consecutive lines (N-Quads).
        """
        opened = self.opened
        roles = self.roles
        cur = self.current
        bnodes = self.bnodes
        in_graph = self.in_graph
        max_pending = self.max_pending
        stream = self.stream
        origin = self.origin
        for (g, items), line in zip(groups, lines, strict=True):
            if g.__class__ is _DEFAULT:
                for q in items:
                    role = roles.get(q.predicate.value)
                    subj = q.subject
                    if role is None or (subj.__class__ is not _NAMED and subj.__class__ is not _BLANK):
                        self.orphans.setdefault(str(q), line)
                    else:
                        name = subj.value
                        o = opened.get(name)
                        if o is None:
                            o = opened[name] = _Open(name, line)
                        obj = q.object
                        lexical = obj.value if obj.__class__ is _LITERAL else ""
                        if (role == "point" and lexical.isascii() and lexical.isdigit()
                                and cast(ox.Literal, obj).datatype.value == _XSD_INTEGER):
                            o.point = (int(lexical), _ABSTRACT)
                        else:
                            self.set_time(o, role, obj, line)
                        if o.complete:
                            self.finish(o)
                    if step:
                        line += 1
            else:
                name = g.value
                if cur is not None and cur.name != name:
                    cur.complete = True
                    point = cur.point
                    if point is not None and cur.time_error is None and not cur.bnodes \
                            and opened.get(cur.name) is cur:
                        # the common case of finish(): a point event, nothing to check or rename
                        del opened[cur.name]
                        self.events += 1
                        self.out.append(Event(stream, cur.name, point[0], point[0], cur.triples, point[1],
                                              0, f"{origin}:{cur.line}"))
                    else:
                        self.finish(cur)
                triples = cast("tuple[ox.Triple, ...]", items)  # a named graph's run (Run)
                o = opened.get(name)
                if o is None:
                    o = opened[name] = _Open(name, line, triples)
                elif not o.triples:
                    o.triples = triples
                    o.line = line  # its time came first; the event is located by its graph
                else:
                    o.triples += triples
                if bnodes:
                    o.bnodes = True
                if in_graph:
                    for t in triples:
                        role = roles.get(t.predicate.value)
                        if role is not None:
                            self.set_time(o, role, t.object, line)
                cur = o
                if len(opened) > max_pending:
                    self.overflow()
        self.current = cur

    def set_time(self, o: _Open, role: str,
                 obj: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple, line: int) -> None:
        if obj.__class__ is not _LITERAL:
            o.time_error = f"time of <{o.name}> is not a literal: {obj}"
            o.time_line = line
            return
        lexical = obj.value
        datatype = obj.datatype.value if obj.datatype else None
        try:
            if datatype == _XSD_INTEGER:
                try:
                    setattr(o, role, (int(lexical), TimeKind.ABSTRACT))
                    return
                except ValueError:
                    pass
            ts = timestamp_from_literal(lexical, datatype)
        except TimeError as e:
            o.time_error = f"bad timestamp for <{o.name}>: {e}"
            o.time_line = line
            return
        setattr(o, role, (ts.value, ts.kind))

    def finish(self, o: _Open) -> None:
        if not o.complete or self.opened.get(o.name) is not o:
            return
        if o.time_error:
            del self.opened[o.name]
            self.out.append(Rejected(self.stream, self.origin, o.time_line, 0, o.time_error, o.name))
            return
        if o.point is None and o.start is None and o.end is None:
            return  # wait for its time
        del self.opened[o.name]
        start: tuple[int, TimeKind] | None
        end: tuple[int, TimeKind] | None
        if o.point is not None:
            start = end = o.point
        else:
            start = o.start if o.start is not None else o.end
            end = o.end if o.end is not None else o.start
            assert start is not None and end is not None  # (checked above)
        if start[1] is not end[1]:
            self.out.append(Rejected(self.stream, self.origin, o.line, 0,
                                     f"<{o.name}> mixes dateTime and integer times", o.name))
            return
        if end[0] < start[0]:
            self.out.append(Rejected(self.stream, self.origin, o.line, 0,
                                     f"interval of <{o.name}> ends before it starts", o.name))
            return
        self.events += 1
        triples: Sequence[ox.Triple] = o.triples
        if o.bnodes:
            for t in triples:
                if t.subject.__class__ is _BLANK or t.object.__class__ is _BLANK:
                    triples = scope_blank_nodes(triples, f"e{self.events}")
                    break
        self.out.append(Event(self.stream, o.name, start[0], end[0], tuple(triples), start[1], 0,
                              f"{self.origin}:{o.line}"))

    def overflow(self) -> None:
        opened = self.opened
        while len(opened) > self.max_pending:
            name = next(iter(opened))
            o = opened.pop(name)
            self.out.append(Rejected(
                self.stream, self.origin, o.line, 0,
                f"event graph <{name}> has no timestamp within the next {self.max_pending} "
                "events (expected <g> prov:generatedAtTime T in the default graph)",
                name,
            ))

    def close(self) -> None:
        cur = self.current
        if cur is not None:
            cur.complete = True
            self.finish(cur)
        for o in list(self.opened.values()):
            if not o.complete:
                # Time metadata about a graph that never came (every graph read is complete here).
                self.out.append(Rejected(
                    self.stream, self.origin, o.line, 0,
                    f"timestamp given for <{o.name}>, but the file has no graph of that name", o.name,
                ))
            elif o.time_error:
                self.out.append(Rejected(self.stream, self.origin, o.time_line, 0, o.time_error, o.name))
            else:
                point = self.time.point[0] if self.time.point else PROV + "generatedAtTime"
                self.out.append(Rejected(
                    self.stream, self.origin, o.line, 0,
                    f"event graph <{o.name}> has no timestamp (expected <{o.name}> <{point}> T "
                    "in the default graph)",
                    o.name,
                ))
        self.opened.clear()
        for text, line in self.orphans.items():
            self.out.append(Rejected(
                self.stream, self.origin, line, 0,
                "default-graph triple is not stream metadata (no time predicate about an event graph)",
                text,
            ))

    def quads(self, quads: list[ox.Quad], line: int, graph_lines: dict[str, int] | None = None,
              quad_lines: list[int] | None = None) -> None:
        """Assemble quads parsed by the record path (``line``: where they start)."""
        groups: list[Run] = []
        lines: list[int] = []
        i = 0
        for g, grp in groupby(quads, _GRAPH):
            qs = list(grp)
            if g.__class__ is _DEFAULT:
                for k, q in enumerate(qs, i):
                    if self.marked and q.subject == _MARK:
                        continue  # an empty unnamed block's marker
                    groups.append((g, [q]))
                    lines.append(quad_lines[k] if quad_lines else line)
            else:
                triples = tuple(map(_TRIPLE, qs))
                if self.marked:
                    triples = tuple(t for t in triples if t != _MARK_TRIPLE)
                groups.append((g, triples))
                lines.append(quad_lines[i] if quad_lines else (graph_lines or {}).get(g.value, line))
            i += len(qs)
        self.runs(groups, lines)


def _content_lines(chunk: str) -> list[int]:
    """0-based numbers of the lines of an N-Quads chunk that hold a statement."""
    out = []
    for i, raw in enumerate(chunk.split("\n")):
        s = raw.strip()
        if s and not s.startswith("#"):
            out.append(i)
    return out


class StreamFile:
    """Events of one recorded stream file, in file order, plus rejected records.

    Iterating yields ``Event`` and ``Rejected`` objects; the caller (the merge
    layer) applies ordering policies across events.

    The file is read in chunks of about ``chunk_size`` characters cut where a
    record most likely ends; each chunk is parsed by one pyoxigraph call. A
    chunk that does not parse (a malformed record, or a cut that was not a
    record boundary) is cut into records by the tokenizer instead, and only its
    records are parsed one batch, then one record, at a time.
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
        chunk_size: int = 1 << 16,
    ) -> None:
        self.path = Path(path)
        self.stream = stream
        self.time = time or TimeConfig()
        suffix = self.path.suffix.lower()
        self.fmt = fmt or ("nquads" if suffix in (".nq", ".nquads") else "trig")
        self.max_pending = max_pending
        self.batch_records = batch_records
        self.chunk_size = chunk_size
        self._fast = True  # tests turn the one-call-per-chunk path off to compare
        self._prefixes: dict[str, str] = {}
        self._prefix_text = ""
        self._prefix_lines = 0
        self._base: str | None = None

    def __iter__(self) -> Iterator[Event | Rejected]:
        self._prefixes, self._prefix_text, self._prefix_lines, self._base = {}, "", 0, None
        asm = _Assembly(self)
        chunks = self._nquads(asm) if self.fmt == "nquads" else self._trig(asm)
        while True:
            # A chunk's objects hold no reference cycles: pausing the collector
            # while one is parsed and assembled saves it from scanning them again and again.
            paused = gc.isenabled()
            if paused:
                gc.disable()
            try:
                more = next(chunks, False)
            finally:
                if paused:
                    gc.enable()
            if not more:
                break
            out = asm.out
            if out:
                asm.out = []
                yield from out
        asm.close()
        yield from asm.out

    # -- reading: one pyoxigraph call per chunk, records only where that fails

    def _trig(self, asm: _Assembly) -> Iterator[bool]:
        size = self.chunk_size
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            buf = ""
            line = 1
            eof = False
            while True:
                if not eof:
                    data = f.read(size)
                    if data:
                        # Cut chunks at line ends so one-line tokens are never split.
                        data += f.readline()
                        buf = buf + data if buf else data
                    else:
                        eof = True
                cut = len(buf) if eof else _trig_cut(buf, len(buf) > 16 * size)
                if not cut and not eof and len(buf) <= 16 * size:
                    continue  # no graph block ends in the buffer yet: read on
                if cut and self._fast:
                    chunk = buf if cut == len(buf) else buf[:cut]
                    after = self._fast_trig(chunk, line, asm)
                    if after is not None:
                        line = after
                        buf = buf[cut:]
                        yield True
                        if eof:
                            return
                        continue
                records, consumed, line = split_records(buf, line, eof)
                self._records(records, asm)
                buf = buf[consumed:]
                yield True
                if eof:
                    return
                if not records and len(buf) > 64 * size:
                    # One record larger than 64 chunks: refuse instead of buffering forever.
                    raise ValueError(f"{self.path}:{line}: a single record exceeds {64 * size} bytes")

    def _fast_trig(self, chunk: str, line: int, asm: _Assembly, marked: bool = False) -> int | None:
        """Parse and assemble a chunk in one call: the line after it, or None (and nothing
        done) if it cannot be. ``marked``: its empty graph blocks hold the marker triple."""
        header = self._prefix_text
        parser = ox.parse(header + "\n" + chunk if header else chunk, format=ox.RdfFormat.TRIG,
                          base_iri=self._base)
        try:
            # Quads of the default graph are kept (few: the time triples), of event graphs only the triples.
            groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                                 for g, grp in groupby(parser, _GRAPH)]
        except SyntaxError:
            return None
        if marked:
            groups = _unmark(groups)
        # Locate every graph block by its braces, to give each event its line. A
        # brace inside a string or comment, an unnamed block, or two adjacent
        # blocks of one graph make the counts differ: then the records decide.
        parts = chunk.split("{")
        nb = len(parts) - 1
        if nb != sum(g.__class__ is not _DEFAULT for g, _ in groups):
            if not marked and _EMPTY_BLOCK.search(chunk):
                return self._fast_trig(_mark_empty(chunk), line, asm, marked=True)
            return None
        # The braces alternate {}{}...: no "}" before the first "{", one after each.
        closes = list(map(str.count, parts, repeat("}")))
        if closes[0] or closes.count(1) != nb:
            return None
        self._update_prefixes(parser)
        asm.bnodes = "[" in chunk or "(" in chunk or _BLANK_LABEL.search(chunk) is not None
        # The line of each "{" and, last, the line after the chunk.
        lines = list(accumulate(map(str.count, parts, repeat("\n")), initial=line))
        # With each graph name on the line of its "{", those are the lines of the graph runs.
        if _NAME_ABOVE_BRACE.search(chunk) is None and asm.points(groups, lines[1:-1]):
            return lines[-1]
        asm.runs(groups, _trig_lines(chunk, line, groups))
        return lines[-1]

    def _nquads(self, asm: _Assembly) -> Iterator[bool]:
        size = self.chunk_size
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            line = 1
            while chunk := f.read(size):
                chunk += f.readline()
                newlines = chunk.count("\n")
                if self._fast and self._fast_nquads(chunk, line, newlines, asm):
                    line += newlines
                else:
                    records = []
                    i = line
                    # Lines as the file reader splits them (a lone CR ends one too).
                    for i, raw in enumerate(io.StringIO(chunk, newline=""), line):
                        s = raw.strip()
                        if s and not s.startswith("#"):
                            records.append(Record(raw, i, 1))
                    self._records(records, asm)
                    line = i + 1
                yield True

    def _fast_nquads(self, chunk: str, line: int, newlines: int, asm: _Assembly) -> bool:
        if "\r" in chunk and chunk.count("\r") != chunk.count("\r\n"):
            return False  # lone CR line ends: let the line reader count them
        try:
            groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                                 for g, grp in groupby(ox.parse(chunk, format=ox.RdfFormat.N_QUADS), _GRAPH)]
        except SyntaxError:
            return False
        # Where each run starts if the chunk holds one quad a line, and, last, the line after it.
        lines = list(accumulate(map(len, map(_ITEMS, groups)), initial=line))
        total = lines[-1] - line
        if total == newlines + (not chunk.endswith("\n")):
            asm.bnodes = _BLANK_LABEL.search(chunk) is not None
            # A chunk may start inside an event and end with a time triple: those runs
            # go one by one, the runs in between in bulk where they have its shape.
            i = 1 if groups and groups[0][0].__class__ is not _DEFAULT else 0
            j = len(groups) - (len(groups) - i) % 2
            asm.runs(groups[:i], lines[:i], step=True)
            if not asm.points(groups[i:j], lines[i + 1:j:2]):
                asm.runs(groups[i:j], lines[i:j], step=True)
            asm.runs(groups[j:], lines[j:-1], step=True)
            return True
        rows = _content_lines(chunk)  # blank or comment lines
        if len(rows) != total:
            return False
        asm.bnodes = _BLANK_LABEL.search(chunk) is not None
        lines = []
        i = 0
        # Blank or comment lines in between: every default-graph quad gets its own line.
        split: list[Run] = []
        for g, qs in groups:
            if g.__class__ is _DEFAULT:
                for q in cast("list[ox.Quad]", qs):
                    split.append((g, [q]))
                    lines.append(line + rows[i])
                    i += 1
            else:
                split.append((g, qs))
                lines.append(line + rows[i])
                i += len(qs)
        asm.runs(split, lines)
        return True

    # -- the record path

    def _records(self, records: list[Record], asm: _Assembly) -> None:
        asm.bnodes = True
        batch: list[Record] = []
        for rec in records:
            if rec.directive:
                if batch:
                    self._run_batch(batch, asm)
                    batch = []
                rej = self._directive(rec)
                if rej:
                    asm.out.append(rej)
                continue
            if rec.text.endswith("}") and (m := _EMPTY_RECORD.search(rec.text)):
                if not rec.text[:m.start()].strip():
                    continue  # an empty unnamed block: nothing at all
                rec = Record(_mark_empty(rec.text), rec.line, rec.column)
                asm.marked = True
            batch.append(rec)
            if len(batch) >= self.batch_records:
                self._run_batch(batch, asm)
                batch = []
        if batch:
            self._run_batch(batch, asm)

    def _run_batch(self, batch: list[Record], asm: _Assembly) -> None:
        for rec, result in self._parse_batch(batch):
            if isinstance(result, Rejected):
                asm.out.append(result)
            elif rec is not None:
                asm.quads(result, rec.line)
            elif self.fmt == "nquads":
                exact = len(result) == len(batch)
                asm.quads(result, batch[0].line, quad_lines=[r.line for r in batch] if exact else None)
            else:
                self._trig_batch(batch, result, asm)

    def _trig_batch(self, batch: list[Record], quads: list[ox.Quad], asm: _Assembly) -> None:
        """Assemble a parsed batch of TriG records, each run located at its record."""
        groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                             for g, grp in groupby(quads, _GRAPH)]
        if asm.marked:
            groups = _unmark(groups)
        blocks = [i for i, r in enumerate(batch) if r.text.rstrip().endswith("}")]
        if len(blocks) != sum(g.__class__ is not _DEFAULT for g, _ in groups):
            asm.quads(quads, batch[0].line, graph_lines=_block_lines(batch))
            return
        lines = []
        k = 0
        for g, _ in groups:
            if g.__class__ is _DEFAULT:
                # where the statements after the previous block start
                lines.append(batch[blocks[k - 1] + 1 if k else 0].line)
            else:
                lines.append(batch[blocks[k]].line)
                k += 1
        asm.bnodes = True
        asm.runs(groups, lines)

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
        parser = ox.parse(self._prefix_text + "\n" + r.text, format=ox.RdfFormat.TRIG,
                          base_iri=self._base)
        try:
            list(parser)
        except SyntaxError as e:
            el, ec = _error_position(e)
            return Rejected(self.stream, str(self.path), r.line, ec, _clean_error(e), r.text.strip())
        self._update_prefixes(parser)
        return None

    def _update_prefixes(self, parser: ox.QuadParser) -> None:
        """Carry the prefixes and base in force at the end of a parsed text to the next one."""
        prefixes = parser.prefixes
        if prefixes != self._prefixes:
            self._prefixes = dict(prefixes)
            self._prefix_text = "\n".join(f"@prefix {p}: <{iri}> ." for p, iri in prefixes.items())
            self._prefix_lines = self._prefix_text.count("\n")
        self._base = parser.base_iri


def _trig_cut(buf: str, any_statement: bool) -> int:
    """Where to end a chunk: after the last line that closes a graph block, else
    (when ``any_statement``) after the last line that ends a statement."""
    i = buf.rfind("}\n")
    if "\r" in buf:  # (looking for "}\r\n" where there is none would scan the whole buffer)
        i = max(i, buf.rfind("}\r\n"))
    if i < 0 and any_statement:
        i = buf.rfind(".\n")
    return buf.find("\n", i) + 1 if i >= 0 else 0


def _trig_lines(chunk: str, line: int, groups: list[Run]) -> list[int]:
    """The line of each run of a chunk whose graph blocks are one per named run."""
    opens = [m.start() for m in _LBRACE.finditer(chunk)]
    closes = [m.start() for m in _RBRACE.finditer(chunk)]
    lines = []
    count = chunk.count
    k = 0
    pos = 0
    for g, _ in groups:
        if g.__class__ is _DEFAULT:
            # Default-graph statements are located where the first of them starts.
            s = closes[k - 1] + 1 if k else 0
            if chunk.startswith("\n", s) and chunk[s + 1:s + 2] not in _NOT_NAME:
                s += 1
            else:
                m = _SKIP.match(chunk, s)
                assert m is not None  # (it matches the empty string)
                s = m.end()
        else:
            s = opens[k] - 1
            k += 1
            while chunk[s] in " \t\r\n":
                s -= 1  # back to the graph name, which may be on an earlier line
        line += count("\n", pos, s)
        pos = s
        lines.append(line)
    return lines


_BLOCK_NAME = re.compile(r"\s*(?:GRAPH\s+)?<([^>]*)>\s*\{", re.I)


def _block_lines(batch: list[Record]) -> dict[str, int]:
    """Lines of the graph blocks in a batch, for messages about their events."""
    out: dict[str, int] = {}
    for r in batch:
        m = _BLOCK_NAME.match(r.text)
        if m:
            out.setdefault(m.group(1), r.line)
    return out


def scope_blank_nodes(triples: Iterable[ox.Triple], suffix: str) -> list[ox.Triple]:
    """Give an event's blank nodes labels of their own: they are scoped to the event."""

    def fix(t):
        return ox.BlankNode(f"{t.value}_{suffix}") if isinstance(t, ox.BlankNode) else t

    out = []
    for t in triples:
        if isinstance(t.subject, ox.BlankNode) or isinstance(t.object, ox.BlankNode):
            t = ox.Triple(fix(t.subject), t.predicate, fix(t.object))
        out.append(t)
    return out
