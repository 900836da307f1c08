"""RDF Message Logs read as streams: one RDF Message, one event (docs/semantics.md).

An RDF Message Log (W3C RSP CG, *RDF Messages*, spec/messages.bs) is N-Triples, N-Quads,
Turtle or TriG in which a comment matching ``/^\\s*@message/`` closes the current message
(rsep.stream.framing finds them), or Jelly, whose frames are messages (rsep.stream.jelly).

Reading (the spec leaves the edges open; these are rsep's choices):

- The text before the first delimiter and after the last one is a message when it holds
  a triple; between two delimiters, a message always (an empty one if nothing is there).
- Directives apply from where they stand to the end of the log, as for a plain Turtle /
  TriG parser reading the log as one document: those before the first delimiter to every
  message; a repeated ``PREFIX`` rebinds its prefix for the messages after it.
- Blank nodes are scoped to their message.
- A message's time comes from a triple with a time predicate (``--time-predicate``)
  anywhere in it; a message without one is rejected with the reason, unless the log is
  read with arrival times. An empty message is a heartbeat: it takes its arrival time, or
  (event time) the time of its stream's previous message (of the next one, if none came
  before).
- The event's graph is the named graph whose time the message gives, or its one named
  graph when the default graph says nothing but about it; its triples are that graph's and
  the default graph's, less the default graph's statements about the message's named graphs
  (stream metadata such as ``<g> prov:generatedAtTime T``, as in stream files). Otherwise
  the event's graph is the default graph (those statements left out), named by the IRI
  whose time the message gives, else ``<STREAM/message/N>``. The other named graphs are
  kept apart, as the event's ``graphs``.

Text logs are read in chunks cut after a delimiter; each chunk is parsed by one
pyoxigraph call with a marker statement in place of every delimiter. A chunk that does not
parse is parsed message by message, so a malformed message is rejected with its line
and column while the others go on.
"""

from __future__ import annotations

import sys
import time as _time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, eq
from pathlib import Path

import pyoxigraph as ox

from rsep.stream.assembly import SKIP, scope_blank_nodes
from rsep.stream.event import Event, Rejected
from rsep.stream.framing import (
    MESSAGE_MARK_IRI,
    clean_error,
    error_position,
    find_delimiters,
    mark_delimiters,
)
from rsep.stream.time import XSD, TimeConfig, TimeError, TimeKind, timestamp_from_literal

FORMATS = ("trig", "nquads", "jelly")
ARRIVAL = "arrival"  # --time-predicate arrival: a message's time is when it was read
_MARK = ox.NamedNode(MESSAGE_MARK_IRI)
_DG = ox.DefaultGraph
_IRI = ox.NamedNode
_BN = ox.BlankNode
_GRAPH = attrgetter("graph_name")
_TRIPLE = attrgetter("triple")
_SUBJECT = attrgetter("subject")
_OBJECT = attrgetter("object")
_PREDICATE_VALUE = attrgetter("predicate.value")


def log_format(path: str | Path) -> str:
    """The syntax of a log by its name: N-Quads / N-Triples, Jelly, else Turtle / TriG."""
    suffix = Path(path).suffix.lower()
    if suffix in (".nq", ".nquads", ".nt", ".ntriples"):
        return "nquads"
    if suffix == ".jelly":
        return "jelly"
    return "trig"


def sniff(path: str | Path, size: int = 1 << 20) -> bool:
    """Whether a text file is an RDF Message Log: an ``@message`` delimiter in its first MiB."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        head = f.read(size)
    found, _ = find_delimiters(head, final=True)
    return bool(found)


@dataclass(slots=True)
class Message:
    """One RDF Message: its number in the log (from 1), the line (Jelly: the frame) where it
    starts, and its quads."""

    number: int
    line: int
    quads: list[ox.Quad]


class MessageLog:
    """The events of an RDF Message Log file (``path`` ``-``: standard input), in order,
    plus the rejected messages. ``time=None`` with ``arrival``: times of arrival."""

    def __init__(self, path: str | Path, stream: str, *, time: TimeConfig | None = None,
                 fmt: str | None = None, arrival: bool = False, chunk_size: int = 1 << 20,
                 source: Iterable[str] | Iterable[bytes] | None = None, delimited: bool = True) -> None:
        self.path = Path(path)
        self.stdin = str(path) == "-"
        self.origin = "<stdin>" if self.stdin else str(path)
        # text (Jelly: bytes) as it arrives (a live source; ``path`` then only names it);
        # Jelly not ``delimited``: each piece is one frame (MQTT)
        self.source = source
        self.delimited = delimited
        self.stream = stream
        self.time = time or TimeConfig()
        self.fmt = fmt or ("trig" if self.stdin or source is not None else log_format(path))
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown message log format {self.fmt!r} (expected one of {', '.join(FORMATS)})")
        self.arrival = arrival
        self.chunk_size = chunk_size

    # ------------------------------------------------------------ messages

    def messages(self) -> Iterator[Message | Rejected]:
        if self.fmt == "jelly":
            yield from self._jelly()
        else:
            yield from self._text()

    def _jelly(self) -> Iterator[Message | Rejected]:
        # (imported here: pyjelly and Protobuf cost a run that reads no Jelly its start-up time)
        from rsep.stream.jelly import JellyError, read_frames

        n = 0
        try:
            for pos, frame in read_frames(self._bytes(), delimited=self.delimited):
                n += 1
                if isinstance(frame, JellyError):
                    at = f" (byte {pos})" if self.delimited else ""  # else one frame per piece
                    yield Rejected(self.stream, self.origin, n, 0, f"frame {n}{at}: {frame}")
                else:
                    yield Message(n, n, frame)
        except JellyError as e:
            yield Rejected(self.stream, self.origin, n + 1, 0, f"frame {n + 1}: {e}")

    def _bytes(self) -> Iterator[bytes]:
        """A Jelly stream's bytes as they arrive (``read1``: what standard input has now)."""
        if self.source is not None:
            yield from self.source  # type: ignore[misc]  # (bytes: the format is Jelly)
            return
        with nullcontext(sys.stdin.buffer) if self.stdin else open(self.path, "rb") as f:
            read = getattr(f, "read1", f.read)
            while data := read(1 << 20):
                yield data

    def _pieces(self) -> Iterator[str]:
        """The log's text in pieces: a file by chunks cut at line ends, standard input line
        by line (a message is read as soon as its delimiter arrives), a live source as sent."""
        if self.source is not None:
            yield from self.source  # type: ignore[misc]  # (text: the format is not Jelly)
            return
        if self.stdin:
            yield from sys.stdin
            return
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            while data := f.read(self.chunk_size):
                yield data + f.readline()  # whole lines: one-line tokens are never cut

    def _text(self) -> Iterator[Message | Rejected]:
        reader = _TextLog(self)
        buf = ""
        pieces = self._pieces()
        eof = False
        held_back = False  # a delimiter whose line is not whole yet: look again
        while not eof:
            data = next(pieces, None)
            if data is None:
                eof = True
            else:
                buf += data
                if not held_back and "@message" not in buf[-len(data) - 8:]:
                    # no delimiter came in (a piece may cut one: the overlap): read on
                    if len(buf) > 256 * self.chunk_size:
                        raise ValueError(f"{self.origin}:{reader.line}: a single message exceeds "
                                         f"{256 * self.chunk_size} characters")
                    continue
            delims, _ = find_delimiters(buf, eof)
            held_back = not eof and bool(delims) and delims[-1][1] == len(buf)
            if held_back:
                delims.pop()  # its line may not have arrived whole yet
            if not eof:
                if not delims:
                    if len(buf) > 256 * self.chunk_size:
                        raise ValueError(f"{self.origin}:{reader.line}: a single message exceeds "
                                         f"{256 * self.chunk_size} characters")
                    continue
                cut = delims[-1][1]  # up to the end of the last delimiter comment
            else:
                cut = len(buf)
            yield from reader.chunk(buf[:cut], delims, eof)
            buf = buf[cut:]

    # ------------------------------------------------------------ events

    def __iter__(self) -> Iterator[Event | Rejected]:
        roles: dict[str, str] = {}
        for role, preds in (("end", self.time.end), ("start", self.time.start),
                            ("point", self.time.point)):
            roles.update(dict.fromkeys(preds, role))
        last: tuple[int, TimeKind] | None = None
        held: list[Message] = []  # empty messages waiting for a time
        for m in self.messages():
            if isinstance(m, Rejected):
                yield m
                continue
            if not m.quads and not self.arrival:
                if last is None:
                    held.append(m)
                    continue
                yield self._event(m, self._name(m), last, last, [])
                continue
            it = self._timed(m, roles)
            if isinstance(it, Rejected):
                yield it
                continue
            if held:
                for h in held:
                    yield self._event(h, self._name(h), (it.start, it.kind), (it.start, it.kind), [])
                held = []
            last = (it.end, it.kind)
            yield it
        for h in held:
            yield Rejected(self.stream, self.origin, h.line, 0,
                           f"message {h.number} is empty and no message of the log has a time to give it")

    def _name(self, m: Message) -> str:
        return f"{self.stream.rstrip('/')}/message/{m.number}"

    def _event(self, m: Message, name: str, start: tuple[int, TimeKind], end: tuple[int, TimeKind],
               triples: list[ox.Triple]) -> Event:
        return Event(self.stream, name, start[0], end[0], tuple(triples), start[1], 0,
                     f"{self.origin}:{m.line}")

    def _timed(self, m: Message, roles: dict[str, str]) -> Event | Rejected:
        quads = m.quads
        # Whole-message checks mapped over the quads; a loop only over the few time triples.
        named = [g.value for g in set(map(_GRAPH, quads)) if g.__class__ is not _DG]
        if len(named) > 1:  # in the message's order (a set's is arbitrary)
            named = [g.value for g in dict.fromkeys(map(_GRAPH, quads)) if g.__class__ is not _DG]
        found: dict[str, dict[tuple[int, TimeKind], str | None]] = {}
        if not self.arrival:
            preds = list(map(_PREDICATE_VALUE, quads))
            timed = compress(quads, map(roles.__contains__, preds)) \
                if not roles.keys().isdisjoint(preds) else ()
            for q in timed:
                role = roles[q.predicate.value]
                try:
                    stamp = _stamp(q.object)
                except TimeError as e:
                    return Rejected(self.stream, self.origin, m.line, 0,
                                    f"message {m.number}: bad time in {q}: {e}", str(q))
                subject = q.subject.value if q.subject.__class__ is ox.NamedNode else None
                found.setdefault(role, {}).setdefault(stamp, subject)
        about: str | None = None
        if self.arrival:
            start = end = (int(_time.time() * 1000), TimeKind.DATETIME)
        else:
            for role, values in found.items():
                if len(values) > 1:
                    return Rejected(self.stream, self.origin, m.line, 0,
                                    f"message {m.number} gives {len(values)} different {role} times")
            if "point" in found:
                (start, about), = found["point"].items()
                end = start
            elif "start" in found or "end" in found:
                (start, about), = (found.get("start") or found["end"]).items()
                (end, _), = (found.get("end") or found["start"]).items()
            else:
                wanted = ", ".join(f"<{p}>" for p in self.time.point) or "a time predicate"
                return Rejected(self.stream, self.origin, m.line, 0,
                                f"message {m.number} has no time (expected a triple with {wanted}; "
                                "or read the log with --time-predicate arrival)")
            if start[1] is not end[1]:
                return Rejected(self.stream, self.origin, m.line, 0,
                                f"message {m.number} mixes dateTime and integer times")
            if end[0] < start[0]:
                return Rejected(self.stream, self.origin, m.line, 0,
                                f"the interval of message {m.number} ends before it starts")
        if len(named) > 1 or (named and about != named[0] and any(
                q.graph_name.__class__ is _DG and q.subject != _IRI(named[0]) for q in quads)):
            return self._kept(m, quads, named, about, start, end)
        if named:  # one named graph, the default one only about it (its time): the event's
            names = set(named)
            triples = [q.triple for q in quads
                       if not (q.graph_name.__class__ is _DG and q.subject.__class__ is ox.NamedNode
                               and q.subject.value in names)]
        else:
            triples = list(map(_TRIPLE, quads))
        if _blank(quads):
            triples = scope_blank_nodes(triples, f"m{m.number}")
        name = named[0] if named else about or self._name(m)
        return self._event(m, name, start, end, triples)

    def _kept(self, m: Message, quads: list[ox.Quad], named: list[str], about: str | None,
              start: tuple[int, TimeKind], end: tuple[int, TimeKind]) -> Event:
        """A message with named graphs besides its event's: the graph whose time it gives
        (else its default graph) is the event's, the others are kept apart as named graphs."""
        names = set(named)
        own = about if about in names else None
        triples: list[ox.Triple] = []
        kept: dict[str, list[ox.Triple]] = {}
        for q in quads:
            g = q.graph_name
            if g.__class__ is _DG:
                if not (q.subject.__class__ is ox.NamedNode and q.subject.value in names):
                    triples.append(q.triple)  # statements about the graphs are metadata
            elif g.value == own:
                triples.append(q.triple)
            else:
                kept.setdefault(g.value, []).append(q.triple)
        if _blank(quads):  # scoped to the message: one suffix for all its graphs
            triples = scope_blank_nodes(triples, f"m{m.number}")
            kept = {g: scope_blank_nodes(ts, f"m{m.number}") for g, ts in kept.items()}
        e = self._event(m, about or self._name(m), start, end, triples)
        e.graphs = tuple((g, tuple(ts)) for g, ts in kept.items())
        return e


def _blank(quads: list[ox.Quad]) -> bool:
    return _BN in set(map(type, map(_SUBJECT, quads))) or _BN in set(map(type, map(_OBJECT, quads)))


def _stamp(obj: object) -> tuple[int, TimeKind]:
    if not isinstance(obj, ox.Literal):
        raise TimeError(f"{obj} is not a literal")
    datatype = obj.datatype.value
    if datatype == XSD + "integer" and obj.value.isascii() and obj.value.lstrip("-").isdigit():
        return int(obj.value), TimeKind.ABSTRACT
    ts = timestamp_from_literal(obj.value, datatype)
    return ts.value, ts.kind


class _TextLog:
    """Cuts the text of a log into messages, chunk by chunk, keeping directives in force."""

    def __init__(self, log: MessageLog) -> None:
        self.log = log
        self.format = ox.RdfFormat.N_QUADS if log.fmt == "nquads" else ox.RdfFormat.TRIG
        self.line = 1  # the line the next chunk starts on
        self.number = 0
        self.started = False  # a delimiter has been read
        self.header = ""  # the directives in force, as text
        self.header_lines = 0
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None

    def chunk(self, text: str, delims: list[tuple[int, int]], final: bool) -> Iterator[Message | Rejected]:
        # Message i's text runs from the end of delimiter i-1 to the start of delimiter i.
        bounds = [0] + [e for _, e in delims]
        ends = [s for s, _ in delims] + ([len(text)] if final else [])
        pieces = list(zip(bounds, ends, strict=False))
        lines = []
        line = self.line
        pos = 0
        for s, _ in pieces:
            line += text.count("\n", pos, s)
            pos = s
            lines.append(line)
        groups = self._parse_all(text, delims)
        if groups is None:
            out = self._one_by_one(text, pieces, lines)
        else:
            out = list(zip(pieces, lines, groups[:len(pieces)], strict=True))
        for i, ((s, e), line, quads) in enumerate(out):
            edge = (i == 0 and not self.started) or (final and i == len(out) - 1)
            if isinstance(quads, Rejected):
                self.number += 1
                quads.reason = f"message {self.number}: {quads.reason}"
                yield quads
                continue
            if edge and not quads:
                continue  # no triple before the first delimiter / after the last: no message
            self.number += 1
            # located at its first statement, past blank lines, comments and directives
            m = SKIP.match(text, s, e)
            lead = m.end() if m else s
            yield Message(self.number, line + text.count("\n", s, lead), quads)
        if delims:
            self.started = True
        self.line += text.count("\n")

    def _parse(self, text: str) -> tuple[list[ox.Quad], ox.QuadParser]:
        body = self.header + "\n" + text if self.header else text
        parser = ox.parse(body, format=self.format, base_iri=self.base)
        return list(parser), parser

    def _parse_all(self, text: str, delims: list[tuple[int, int]]) -> list[list[ox.Quad]] | None:
        """Every message of a chunk from one parse (None: it does not parse)."""
        try:
            quads, parser = self._parse(mark_delimiters(text, delims) if delims else text)
        except SyntaxError:
            return None
        # the markers' positions, found by comparisons mapped over the quads
        marks = list(compress(range(len(quads)), map(eq, repeat(_MARK), map(_SUBJECT, quads))))
        for i in marks:
            if quads[i].predicate != _MARK:
                return None
            if quads[i].graph_name.__class__ is not _DG:
                return None  # a delimiter inside a graph block: the messages decide
        bounds = [-1, *marks, len(quads)]
        groups = [quads[a + 1:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        if len(groups) != len(delims) + 1:
            return None
        self._directives(parser)
        return groups

    def _one_by_one(self, text: str, pieces: list[tuple[int, int]],
                    lines: list[int]) -> list[tuple[tuple[int, int], int, list[ox.Quad] | Rejected]]:
        out: list[tuple[tuple[int, int], int, list[ox.Quad] | Rejected]] = []
        log = self.log
        for (s, e), line in zip(pieces, lines, strict=True):
            piece = text[s:e]
            try:
                quads, parser = self._parse(piece)
            except SyntaxError as err:
                el, ec = error_position(err)
                hl = self.header_lines + 1 if self.header else 0
                snippet = piece.strip().splitlines()[0][:200] if piece.strip() else ""
                out.append(((s, e), line, Rejected(log.stream, log.origin, line + max(el - 1 - hl, 0),
                                                   ec, clean_error(err), snippet)))
                continue
            self._directives(parser)
            out.append(((s, e), line, quads))
        return out

    def _directives(self, parser: ox.QuadParser) -> None:
        """Carry the prefixes and base in force after a parse to the next one."""
        if self.format == ox.RdfFormat.N_QUADS:
            return
        prefixes = parser.prefixes
        if prefixes != self.prefixes:
            self.prefixes = dict(prefixes)
            self.header = "\n".join(f"@prefix {p}: <{iri}> ." for p, iri in prefixes.items())
            self.header_lines = self.header.count("\n")
        self.base = parser.base_iri
