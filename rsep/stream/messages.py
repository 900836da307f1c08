"""RDF Message Logs read as streams: one RDF Message, one event (docs/semantics.md).

An RDF Message Log (W3C RSP CG, *RDF Messages*, spec/messages.bs) is N-Triples, N-Quads,
Turtle or TriG that opens with a "-messages" version label and separates its messages with
``MESSAGE`` (or ``@message .``), or, as the December 2025 draft wrote it, with comments
matching ``/^\\s*@message/`` (rsep.stream.framing finds both); or Jelly, whose frames are
messages (rsep.stream.jelly). docs/semantics.md "RDF Message Logs" says every reading.

Reading (the spec leaves the edges open; these are rsep's choices):

- Current syntax: a delimiter before any triple opens with an empty message, two
  delimiters in a row hold an empty one, and a last delimiter opens none. Draft syntax:
  the text before the first delimiter and after the last one is a message when it holds
  a triple; between two delimiters, a message always (an empty one if nothing is there).
- A framing error (a delimiter inside a graph block, ``@message`` without its dot, a
  ``MESSAGE`` in a log without a "-messages" label, the two syntaxes mixed), a byte that
  is not UTF-8, a term too large for pyoxigraph and a message over the size bound reject
  the message they stand in, located, and the log goes on.
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

import io
import re
import sys
import time as _time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, eq
from pathlib import Path

import pyoxigraph as ox

from rsep.stream.assembly import SKIP
from rsep.stream.event import Event, Rejected
from rsep.stream.framing import (
    CURRENT,
    MESSAGE_MARK_IRI,
    Delimiters,
    Scan,
    clean_error,
    error_position,
    is_message_log,
    mark_delimiters,
    might_delimit,
)
from rsep.stream.time import XSD, TimeConfig, TimeError, TimeKind, timestamp_from_literal

FORMATS = ("trig", "nquads", "jelly")
# Characters of one message at most (--max-record-bytes raises it): pyoxigraph refuses a
# term over 16 MiB, and a message is meant to be small (spec/messages.bs, RDF Messages).
MAX_MESSAGE = 16 << 20
# A byte that is not UTF-8, as the surrogateescape decoding keeps it (never replaced)
_INVALID = re.compile("[\udc80-\udcff]")
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
    """Whether a text file is an RDF Message Log: a "-messages" version label or a delimiter
    (of either syntax) in its first MiB."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        head = f.read(size)
    return is_message_log(head)


def messages_mode(syntax: str, messages: bool, url: str) -> bool:
    """Whether a source of ``syntax`` is read as RDF Messages (``messages``: asked for, by
    ``--stream-format rdfm``): Jelly's frames always are; JSON lines never can be."""
    if syntax == "jelly":
        return True
    if messages and syntax == "jsonl":
        raise ValueError(f"an RDF Message Log is TriG or N-Quads, not JSON lines: {url!r}")
    return messages


def payload_messages(origin: str, stream: str, payloads: Iterable[str], *, fmt: str,
                     time: TimeConfig | None = None, arrival: bool = False) -> MessageLog:
    """The messages of a transport that carries one RDF Message per payload (an MQTT
    message, a Kafka record, a WebSocket frame): the transport delimits them and announces
    the messages mode, so a payload needs neither a version label nor ``MESSAGE``; one in
    the December 2025 draft's form, with ``# @message``, is refused as mixed."""
    return MessageLog(origin, stream, time=time, fmt=fmt, arrival=arrival, syntax=CURRENT,
                      source=(p + "\nMESSAGE\n" for p in payloads))


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
                 source: Iterable[str] | Iterable[bytes] | None = None, delimited: bool = True,
                 syntax: str | None = None, max_message: int | None = None) -> None:
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
        # CURRENT: the messages announced out of band (each MQTT payload one message, a
        # version=...-messages media type); None: as the log's text says
        self.syntax = syntax
        self.max_message = MAX_MESSAGE if max_message is None else max_message

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
                    yield Message(n, n, _scoped(frame, n))
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
            # (line by line: a message is read when its delimiter arrives)
            buffer = getattr(sys.stdin, "buffer", None)  # (None: a test's StringIO)
            yield from sys.stdin if buffer is None else io.TextIOWrapper(
                buffer, encoding="utf-8", errors="surrogateescape", newline="")
            return
        # an invalid byte is kept as a lone surrogate (U+DC80 + byte), never replaced: the
        # message holding it is rejected with its place, not read altered
        with open(self.path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            while data := f.read(self.chunk_size):
                yield data + f.readline()  # whole lines: one-line tokens are never cut

    def _text(self) -> Iterator[Message | Rejected]:
        reader = _TextLog(self)
        scanner = reader.scanner
        bound = self.max_message
        buf = ""
        pieces = self._pieces()
        eof = False
        rescan = False  # a delimiter whose statement may not be whole yet: look again
        skipping = False  # in a message over the bound, looking for its end
        while not eof:
            data = next(pieces, None)
            if data is None:
                eof = True
            else:
                buf += data
                if not rescan and not might_delimit(buf, max(len(buf) - len(data) - 8, 0)):
                    # no delimiter came in (a piece may cut one: the overlap): read on
                    if len(buf) > bound:
                        if not skipping:
                            yield reader.oversize(buf)
                            skipping = True
                        buf = reader.skip(buf, len(buf) - 16)
                    continue
            state = (scanner.syntax, scanner.plain_label)
            scan = scanner.scan(buf, eof)
            cuts = scan.cuts
            rescan = scan.pending or (not eof and bool(cuts) and cuts[-1][1] == len(buf))
            if rescan and cuts and cuts[-1][1] == len(buf):
                cuts.pop()  # its line may not have arrived whole yet
            if skipping:
                if not cuts:
                    scanner.syntax, scanner.plain_label = state
                    if not eof:
                        buf = reader.skip(buf, len(buf) - 16)
                        continue
                    reader.skip(buf, len(buf))
                    break
                buf = reader.skip(buf, cuts[0][1])  # the bound message ends at its delimiter
                skipping = False
                scanner.syntax, scanner.plain_label = state
                scan = scanner.scan(buf, eof)
                cuts = scan.cuts
                if not eof and cuts and cuts[-1][1] == len(buf):
                    cuts.pop()
            if not eof:
                if not cuts:
                    scanner.syntax, scanner.plain_label = state  # the same text is scanned again
                    if len(buf) > bound:
                        yield reader.oversize(buf)
                        skipping = True
                        buf = reader.skip(buf, len(buf) - 16)
                    continue
                cut = cuts[-1][1]  # up to the end of the last delimiter
            else:
                cut = len(buf)
            yield from reader.chunk(buf[:cut], Scan(cuts, [x for x in scan.labels if x[0] < cut],
                                                    [x for x in scan.errors if x[0] < cut], cut), eof)
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
        e = self._event(m, about or self._name(m), start, end, triples)
        e.graphs = tuple((g, tuple(ts)) for g, ts in kept.items())
        return e


def _blank(quads: list[ox.Quad]) -> bool:
    return (_BN in set(map(type, map(_SUBJECT, quads))) or _BN in set(map(type, map(_OBJECT, quads)))
            or _BN in set(map(type, map(_GRAPH, quads))))


def _scoped(quads: list[ox.Quad], number: int) -> list[ox.Quad]:
    """A message's quads with blank nodes of its own: a label is scoped to its message
    (spec/messages.bs), and one parse of many messages (or one Jelly stream) gives the same
    label in two messages the same node. One suffix for all the message's graphs."""
    if not _blank(quads):
        return quads
    suffix = f"_m{number}"

    def fix(t):
        return ox.BlankNode(t.value + suffix) if t.__class__ is _BN else t

    return [ox.Quad(fix(q.subject), q.predicate, fix(q.object), fix(q.graph_name))
            if q.subject.__class__ is _BN or q.object.__class__ is _BN or q.graph_name.__class__ is _BN
            else q for q in quads]


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
        self.scanner = Delimiters(log.syntax)
        self.line = 1  # the line the next chunk starts on
        self.offset = 0  # the byte offset it starts at
        self.number = 0
        self.started = False  # a delimiter has been read
        self.header = ""  # the directives in force, as text
        self.header_lines = 0
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None

    def _at(self, text: str, i: int) -> tuple[int, int]:
        """The line and column of offset ``i`` of a chunk."""
        return self.line + text.count("\n", 0, i), i - (text.rfind("\n", 0, i) + 1) + 1

    def _bytes(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogateescape"))

    def oversize(self, buf: str) -> Rejected:
        """A message over the bound, not held: rejected at its start, skipped to its end."""
        self.number += 1
        m = SKIP.match(buf)
        line, col = self._at(buf, m.end() if m else 0)
        log = self.log
        return Rejected(log.stream, log.origin, line, col,
                        f"message {self.number}: over {log.max_message:,} characters "
                        "(--max-record-bytes); skipped to its delimiter",
                        _INVALID.sub("\ufffd", buf[:200].strip()))

    def skip(self, buf: str, upto: int) -> str:
        """``buf`` without its first ``upto`` characters (of a message over the bound), the
        lines and bytes counted."""
        upto = max(upto, 0)
        self.line += buf.count("\n", 0, upto)
        self.offset += self._bytes(buf[:upto])
        self.started = True
        return buf[upto:]

    def chunk(self, text: str, scan: Scan, final: bool) -> Iterator[Message | Rejected]:
        delims = scan.cuts
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
        clean = mark_delimiters(text, [], scan.labels) if scan.labels else text
        bad: dict[int, Rejected] = {}  # piece -> its rejection: framing, bytes, size
        log = self.log
        for off, reason in scan.errors:
            i = next((k for k, (s, e) in enumerate(pieces) if s <= off < e), None)
            if i is not None and i not in bad:
                bad[i] = Rejected(log.stream, log.origin, *self._at(text, off), reason,
                                  text[off:off + 200].split("\n", 1)[0])
        if _INVALID.search(text):
            for i, (s, e) in enumerate(pieces):
                m = _INVALID.search(text, s, e)
                if m is not None and i not in bad:
                    where = self.offset + self._bytes(text[:m.start()])
                    bad[i] = Rejected(log.stream, log.origin, *self._at(text, m.start()),
                                      f"invalid UTF-8: byte 0x{ord(m.group()) - 0xDC00:02X} at byte "
                                      f"offset {where} (a message holding it is not read, not even "
                                      "in part)", _INVALID.sub("\ufffd", text[s:e].strip()[:200]))
        for i, (s, e) in enumerate(pieces):
            if e - s > log.max_message and i not in bad:
                m = SKIP.match(text, s, e)
                bad[i] = Rejected(log.stream, log.origin, *self._at(text, m.end() if m else s),
                                  f"over {log.max_message:,} characters (--max-record-bytes)",
                                  text[s:s + 200].strip())
        groups = None if bad else self._parse_all(clean, delims)
        if groups is None:
            out = self._one_by_one(clean, pieces, lines, bad)
        else:
            out = list(zip(pieces, lines, groups[:len(pieces)], strict=True))
        current = self.scanner.syntax == CURRENT
        for i, ((s, e), line, quads) in enumerate(out):
            first = i == 0 and not self.started
            last = final and i == len(out) - 1
            if isinstance(quads, Rejected):
                self.number += 1
                quads.reason = f"message {self.number}: {quads.reason}"
                yield quads
                continue
            if not quads and (last or (first and not current)):
                # current syntax: a last delimiter opens no message; the draft: no triple
                # before the first delimiter / after the last, no message
                continue
            self.number += 1
            # located at its first statement, past blank lines, comments and directives
            m = SKIP.match(clean, s, e)
            lead = m.end() if m else s
            yield Message(self.number, line + text.count("\n", s, lead), _scoped(quads, self.number))
        if delims:
            self.started = True
        self.line += text.count("\n")
        self.offset += len(text) if text.isascii() else self._bytes(text)

    def _parse(self, text: str) -> tuple[list[ox.Quad], ox.QuadParser]:
        body = self.header + "\n" + text if self.header else text
        parser = ox.parse(body, format=self.format, base_iri=self.base)
        return list(parser), parser

    def _parse_all(self, text: str, delims: list[tuple[int, int]]) -> list[list[ox.Quad]] | None:
        """Every message of a chunk from one parse (None: it does not parse)."""
        try:
            quads, parser = self._parse(mark_delimiters(text, delims) if delims else text)
        except (SyntaxError, MemoryError):  # (MemoryError: a term over pyoxigraph's buffer)
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

    def _one_by_one(self, text: str, pieces: list[tuple[int, int]], lines: list[int],
                    bad: dict[int, Rejected]) -> list[tuple[tuple[int, int], int, list[ox.Quad] | Rejected]]:
        out: list[tuple[tuple[int, int], int, list[ox.Quad] | Rejected]] = []
        log = self.log
        for i, ((s, e), line) in enumerate(zip(pieces, lines, strict=True)):
            if i in bad:
                out.append(((s, e), line, bad[i]))
                continue
            piece = text[s:e]
            try:
                quads, parser = self._parse(piece)
            except MemoryError as err:
                m = SKIP.match(text, s, e)
                out.append(((s, e), line, Rejected(log.stream, log.origin, *self._at(text, m.end() if m else s),
                                                   f"a term too large for the parser ({err}); message "
                                                   f"of {e - s:,} characters", piece.strip()[:200])))
                continue
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
