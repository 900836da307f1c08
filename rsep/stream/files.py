"""Reading recorded RDF streams from TriG / N-Quads files in bounded memory.

A file is read in chunks, each parsed by one pyoxigraph call; only a chunk that fails
is cut into records (rsep.stream.framing) and parsed batch by batch, then record by
record, so one malformed record is rejected with its file, line and column while every
other record goes on. Parsed quads become events in rsep.stream.assembly.

Each named graph is one event; its time comes from a triple
``<g> prov:generatedAtTime T`` in the default graph (or the other configured
time predicates), or, when enabled, from a triple with a time predicate inside
the event graph itself (the ``<g#event>`` proposal of the W3C RSP CG notes).
"""

from __future__ import annotations

import gc
import io
import os
import re
from collections.abc import Iterator
from itertools import accumulate, groupby, repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import IO, cast

import pyoxigraph as ox

from rsep.stream.assembly import (
    BLANK_LABEL,
    EMPTY_BLOCK,
    NOT_NAME,
    SKIP,
    Assembly,
    Run,
    content_lines,
    mark_empty,
    scope_blank_nodes,
    unmark,
)
from rsep.stream.event import Event, Rejected
from rsep.stream.framing import Record, clean_error, error_position, split_records
from rsep.stream.time import TimeConfig

__all__ = ["StreamFile", "TimeConfig", "scope_blank_nodes"]

_GRAPH = attrgetter("graph_name")
_TRIPLE = attrgetter("triple")
_ITEMS = itemgetter(1)
_DEFAULT = ox.DefaultGraph
_NAMED = ox.NamedNode
_NAME_ABOVE_BRACE = re.compile(r"\n[ \t\r\n]*\{")  # a graph name on a line before its "{"
_LBRACE = re.compile(r"\{")
_RBRACE = re.compile(r"\}")
_EMPTY_RECORD = re.compile(r"\{(?:[ \t\r\n]|#[^\n]*\n)*\}\s*\Z")
# A byte that is not UTF-8, as the surrogateescape decoding keeps it
_INVALID = re.compile("[\udc80-\udcff]")
MAX_RECORD = 64 << 20  # characters of one record at most (--max-record-bytes)
# Levels of collections, blank node property lists and quoted triples one record may nest:
# a 4 MB record nested 10^6 deep is 2 x 10^6 triples of one event (1.34 GB and more).
MAX_DEPTH = 256
# What nests, and what a nesting character inside of is not one: strings, IRIs, comments.
_NESTING = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
                      r'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<<|>>|<[^<>"{}|^`\\\s]*>'
                      r'|#[^\n]*|[(\[)\]]')
_OPEN = frozenset(("(", "[", "<<"))
_CLOSE = frozenset((")", "]", ">>"))


def too_deep(text: str) -> int | None:
    """The offset in ``text`` where nesting first goes over :data:`MAX_DEPTH`, if it does.
    Counting the characters first keeps the scan off every ordinary text."""
    if text.count("(") + text.count("[") + text.count("<<") <= MAX_DEPTH:
        return None
    depth = 0
    for m in _NESTING.finditer(text):
        tok = m.group()
        if tok in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif tok in _CLOSE:
            depth -= 1
    return None


def invalid_utf8(stream: str, origin: str, r: Record) -> Rejected | None:
    """The rejection of a record that holds a byte that is not UTF-8: its line, column and
    value. Read as U+FFFD, the record would have become an event whose text is not the
    file's, with nothing said."""
    m = _INVALID.search(r.text)
    if m is None:
        return None
    before = r.text[:m.start()]
    nl = before.count("\n")
    col = m.start() - (before.rfind("\n") + 1) + 1 + (r.column - 1 if not nl else 0)
    byte = ord(m.group()) - 0xDC00
    return Rejected(stream, origin, r.line + nl, col,
                    f"invalid UTF-8: byte 0x{byte:02X} (a record holding it is not read, "
                    "not even in part)", _printable(r.text.strip()[:200]))


def _printable(text: str) -> str:
    """Text for a message or a dead-letter record: invalid bytes shown as U+FFFD."""
    return _INVALID.sub("\ufffd", text)


class _Replayed(io.RawIOBase):
    """Standard input as the native path found it: the bytes it read (the file ``fd``, from
    its start), then what standard input still holds."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._fd is not None:
            data = os.pread(self._fd, len(b), self._at)
            if data:
                b[:len(data)] = data
                self._at += len(data)
                return len(data)
            os.close(self._fd)
            self._fd = None
        return os.readv(0, [b])

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        super().close()


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
        text: str | None = None,
        max_record: int | None = None,
        replay: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.text = text  # read this text instead of the file (a frame of a live source)
        # standard input read by the native path before it refused (rsep.stream.native): a
        # file descriptor of a file holding what it read, read first, then standard input
        self.replay = replay
        self.stream = stream
        self.time = time or TimeConfig()
        suffix = self.path.suffix.lower()
        self.fmt = fmt or ("nquads" if suffix in (".nq", ".nquads") else "trig")
        self.max_pending = max_pending
        self.batch_records = batch_records
        self.chunk_size = chunk_size
        # (pyoxigraph refuses a term over 16 MiB: a record may hold a few at most)
        self.max_record = MAX_RECORD if max_record is None else max_record
        self._fast = True  # tests turn the one-call-per-chunk path off to compare
        self._prefixes: dict[str, str] = {}
        self._prefix_text = ""
        self._prefix_lines = 0
        self._base: str | None = None

    def __iter__(self) -> Iterator[Event | Rejected]:
        self._prefixes, self._prefix_text, self._prefix_lines, self._base = {}, "", 0, None
        asm = Assembly(self.stream, str(self.path), self.time, self.max_pending)
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

    def _trig(self, asm: Assembly) -> Iterator[bool]:
        size = self.chunk_size
        with self._open() as f:
            buf = ""
            line = 1
            eof = False
            while True:
                if not eof:
                    # past 16 chunks with no record's end, the buffer doubles at each read:
                    # a long record costs a few scans and copies of it, not one per chunk
                    data = f.read(size if len(buf) <= 16 * size else len(buf))
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
                if not records and len(buf) > self.max_record:
                    # One record larger than the bound: rejected, and the file's reading
                    # ends there (where the next record starts cannot be known without
                    # holding this one), what came before taken and evaluated as usual.
                    asm.out.append(Rejected(
                        self.stream, str(self.path), line, 1,
                        f"a record over {self.max_record:,} characters (--max-record-bytes); "
                        "the rest of this stream file is not read", _printable(buf[:200])))
                    yield True
                    return

    def _open(self) -> IO[str]:
        if self.text is not None:
            return io.StringIO(self.text, newline="")
        if self.replay is not None:
            fd, self.replay = self.replay, None
            return io.TextIOWrapper(io.BufferedReader(_Replayed(fd)), encoding="utf-8",
                                    errors="surrogateescape", newline="")
        # an invalid byte is kept as a lone surrogate (U+DC80 + byte), never replaced: the
        # record holding it is rejected with its place (invalid_utf8), not read altered
        return open(self.path, encoding="utf-8", errors="surrogateescape", newline="")  # noqa: SIM115

    def _fast_trig(self, chunk: str, line: int, asm: Assembly, marked: bool = False) -> int | None:
        """Parse and assemble a chunk in one call: the line after it, or None (and nothing
        done) if it cannot be. ``marked``: its empty graph blocks hold the marker triple."""
        if _INVALID.search(chunk) or too_deep(chunk) is not None:
            return None  # the records decide which holds the invalid byte, or nests too deep
        header = self._prefix_text
        parser = ox.parse(header + "\n" + chunk if header else chunk, format=ox.RdfFormat.TRIG,
                          base_iri=self._base)
        try:
            quads = list(parser)
        except (SyntaxError, MemoryError):  # (MemoryError: a term over pyoxigraph's buffer)
            return None
        braces = _braces(chunk, line)
        asm.quoted = _quoted(chunk)
        if not marked:
            after = self._uniform(parser, quads, braces, asm)
            if after is not None:
                return after
        # Quads of the default graph are kept (few: the time triples), of event graphs only the triples.
        groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                             for g, grp in groupby(quads, _GRAPH)]
        if marked:
            groups = unmark(groups)
        # Locate every graph block by its braces, to give each event its line. A
        # brace inside a string or comment, an unnamed block, or two adjacent
        # blocks of one graph make the counts differ: then the records decide.
        opens, _, after, alternate, above, blank = braces
        if len(opens) != len(groups) - [g.__class__ for g, _ in groups].count(_DEFAULT):
            if not marked and EMPTY_BLOCK.search(chunk):
                return self._fast_trig(mark_empty(chunk), line, asm, marked=True)
            return None
        # The braces alternate {}{}...: no "}" before the first "{", one after each.
        if not alternate:
            return None
        self._update_prefixes(parser)
        asm.bnodes = blank
        # With each graph name on the line of its "{", those are the lines of the graph runs.
        if not above and asm.points(groups, opens):
            return after
        asm.runs(groups, _trig_lines(chunk, line, groups))
        return after

    def _uniform(self, parser: ox.QuadParser, quads: list[ox.Quad], braces: Braces,
                 asm: Assembly) -> int | None:
        """Assemble a chunk of the commonest shape, events of k triples each (k the same for
        the whole chunk), each after its time triple, without grouping its quads into runs:
        the line after the chunk, or None (and nothing done) for any other shape, which
        _fast_trig then groups."""
        n = len(quads)
        # k from where the second time triple is (most other chunks are turned away here,
        # before any mapping over the whole)
        if n < 4 or quads[0].graph_name.__class__ is not _DEFAULT:
            return None
        step = 1
        while step < n and quads[step].graph_name.__class__ is not _DEFAULT:
            step += 1
        if step == 1 or step == n or n % step:
            return None
        # Each stride a time quad (default graph), then quads of named graphs from its
        # second to its last position. The graph of each quad is read only there: with
        # one "{" per stride (below), each stride's named quads are one block, since a
        # block's quads come out together and a default quad between two blocks' would
        # need a second block in its stride. So none is in the default graph and all are
        # in the block's graph, the stride's second quad's.
        nodes = list(map(_GRAPH, quads[1::step]))
        if set(map(type, nodes)) != {_NAMED} \
                or set(map(type, map(_GRAPH, quads[::step]))) != {_DEFAULT} \
                or (step > 2 and set(map(type, map(_GRAPH, quads[step - 1::step]))) != {_NAMED}):
            return None
        # One "{" per event: none in a string or comment, no unnamed or empty block, no
        # graph in two blocks (whose triples would be one run of the stride's). With
        # those, one "}" a block means none elsewhere (in a string or comment).
        opens, closes, after, _, above, blank = braces
        if len(opens) != len(nodes) or closes != len(nodes) or above:
            return None
        asm.bnodes = blank
        triples = list(zip(*[map(_TRIPLE, quads[j::step]) for j in range(1, step)], strict=True))
        if not asm.stamped(nodes, quads[::step], triples, opens):
            return None
        self._update_prefixes(parser)
        return after

    def _nquads(self, asm: Assembly) -> Iterator[bool]:
        size = self.chunk_size
        with self._open() as f:
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

    def _fast_nquads(self, chunk: str, line: int, newlines: int, asm: Assembly) -> bool:
        if "\r" in chunk and chunk.count("\r") != chunk.count("\r\n"):
            return False  # lone CR line ends: let the line reader count them
        if _INVALID.search(chunk):
            return False
        try:
            groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                                 for g, grp in groupby(ox.parse(chunk, format=ox.RdfFormat.N_QUADS), _GRAPH)]
        except (SyntaxError, MemoryError):
            return False
        # Where each run starts if the chunk holds one quad a line, and, last, the line after it.
        lines = list(accumulate(map(len, map(_ITEMS, groups)), initial=line))
        total = lines[-1] - line
        if total == newlines + (not chunk.endswith("\n")):
            asm.bnodes = BLANK_LABEL.search(chunk) is not None
            asm.quoted = _quoted(chunk)
            # A chunk may start inside an event and end with a time triple: those runs
            # go one by one, the runs in between in bulk where they have its shape.
            i = 1 if groups and groups[0][0].__class__ is not _DEFAULT else 0
            j = len(groups) - (len(groups) - i) % 2
            asm.runs(groups[:i], lines[:i], step=True)
            if not asm.points(groups[i:j], lines[i + 1:j:2]):
                asm.runs(groups[i:j], lines[i:j], step=True)
            asm.runs(groups[j:], lines[j:-1], step=True)
            return True
        rows = content_lines(chunk)  # blank or comment lines
        if len(rows) != total:
            return False
        asm.bnodes = BLANK_LABEL.search(chunk) is not None
        asm.quoted = _quoted(chunk)
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

    def _records(self, records: list[Record], asm: Assembly) -> None:
        asm.bnodes = True
        asm.quoted = True
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
                rec = Record(mark_empty(rec.text), rec.line, rec.column)
                asm.marked = True
            batch.append(rec)
            if len(batch) >= self.batch_records:
                self._run_batch(batch, asm)
                batch = []
        if batch:
            self._run_batch(batch, asm)

    def _run_batch(self, batch: list[Record], asm: Assembly) -> None:
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

    def _trig_batch(self, batch: list[Record], quads: list[ox.Quad], asm: Assembly) -> None:
        """Assemble a parsed batch of TriG records, each run located at its record."""
        groups: list[Run] = [(g, list(grp) if g.__class__ is _DEFAULT else tuple(map(_TRIPLE, grp)))
                             for g, grp in groupby(quads, _GRAPH)]
        if asm.marked:
            groups = unmark(groups)
        blocks = [i for i, r in enumerate(batch) if r.text.rstrip().endswith("}")]
        if len(blocks) != sum(g.__class__ is not _DEFAULT for g, _ in groups):
            asm.quads(quads, batch[0].line, graph_lines=_block_lines(batch, self._prefixes))
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
        asm.quoted = True
        asm.runs(groups, lines)

    def _parse_text(self, text: str) -> list[ox.Quad]:
        fmt = ox.RdfFormat.N_QUADS if self.fmt == "nquads" else ox.RdfFormat.TRIG
        return list(ox.parse(text, format=fmt, base_iri=self._base))

    def _parse_batch(self, batch: list[Record]) -> Iterator[tuple[Record | None, list[ox.Quad] | Rejected]]:
        header = "" if self.fmt == "nquads" else self._prefix_text
        body = "\n".join(r.text for r in batch)
        if not _INVALID.search(body) and too_deep(body) is None:
            try:
                quads = self._parse_text(header + "\n" + body if header else body)
            except (SyntaxError, MemoryError):
                quads = None  # a bad record in the batch: each is parsed on its own below
            if quads is not None:
                yield None, quads
                return
        for r in batch:
            bad = invalid_utf8(self.stream, str(self.path), r) or self._too_deep(r)
            if bad is not None:
                yield r, bad
                continue
            try:
                yield r, self._parse_text(header + "\n" + r.text if header else r.text)
            except MemoryError as e:
                yield r, Rejected(self.stream, str(self.path), r.line, r.column,
                                  f"a term too large for the parser ({e}); record of "
                                  f"{len(r.text):,} characters", r.text.strip()[:200])
            except SyntaxError as e:
                el, ec = error_position(e)
                hl = (self._prefix_lines + 1) if header else 0
                line = r.line + max(el - 1 - hl, 0)
                col = ec + (r.column - 1 if el - hl == 1 else 0)
                snippet = r.text.strip().splitlines()[0][:200] if r.text.strip() else ""
                yield r, Rejected(self.stream, str(self.path), line, col, clean_error(e), snippet)

    def _too_deep(self, r: Record) -> Rejected | None:
        at = too_deep(r.text)
        if at is None:
            return None
        before = r.text[:at]
        nl = before.count("\n")
        col = at - (before.rfind("\n") + 1) + 1 + (r.column - 1 if not nl else 0)
        return Rejected(self.stream, str(self.path), r.line + nl, col,
                        f"collections, blank nodes or quoted triples nested deeper than "
                        f"{MAX_DEPTH} levels here (a record holding them is not read)",
                        _printable(r.text.strip()[:200]))

    def _directive(self, r: Record) -> Rejected | None:
        bad = invalid_utf8(self.stream, str(self.path), r)
        if bad is not None:
            return bad
        parser = ox.parse(self._prefix_text + "\n" + r.text, format=ox.RdfFormat.TRIG,
                          base_iri=self._base)
        try:
            list(parser)
        except MemoryError as e:
            return Rejected(self.stream, str(self.path), r.line, r.column,
                            f"a term too large for the parser ({e})", r.text.strip()[:200])
        except SyntaxError as e:
            el, ec = error_position(e)
            return Rejected(self.stream, str(self.path), r.line, ec, clean_error(e), r.text.strip())
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



# What the fast paths ask of a chunk's text before trusting its parsed quads:
# (the line of each "{", the number of "}", the line after the chunk, whether the braces
# alternate "{" "}" from the first, whether a "{" follows a line break with only
# whitespace between (a graph name on a line above its "{"), whether the text may hold a
# blank node: "[", "(" or "_:").
Braces = tuple[list[int], int, int, bool, bool, bool]


def _braces_str(chunk: str, line: int) -> Braces:
    """:data:`Braces` by str methods and regexes: several passes, each in C (the pure build's)."""
    parts = chunk.split("{")
    closes = list(map(str.count, parts, repeat("}")))
    lines = list(accumulate(map(str.count, parts, repeat("\n")), initial=line))
    alternate = not closes[0] and closes.count(1) == len(parts) - 1
    return (lines[1:-1], sum(closes), lines[-1], alternate,
            _NAME_ABOVE_BRACE.search(chunk) is not None,
            "[" in chunk or "(" in chunk or BLANK_LABEL.search(chunk) is not None)


def _braces_scan(chunk: str, line: int) -> Braces:
    """:data:`Braces` in one pass over the characters (the compiled build's: a C loop that
    passes over most characters with one test of a bit mask); equal to :func:`_braces_str`
    on every text (tests/stream/test_chunk_braces.py)."""
    opens: list[int] = []
    closes = 0
    depth = 0
    alternate = True
    above = False
    blank = False
    # a first test that passes over most bytes: one bit for each of those it looks at,
    # "\n" "(" "[" ":" "{" "}", by its low six bits ("h", "z", ... pass it, then no other)
    mask = (1 << 10) | (1 << 40) | (1 << (91 & 63)) | (1 << 58) | (1 << (123 & 63)) | (1 << (125 & 63))
    # UTF-8 keeps every character looked at a byte of its own, and any other out of them
    data = chunk.encode("utf-8", "surrogatepass")
    i = -1
    prev = 0
    for ch in data:
        i += 1
        if not (mask >> (ch & 63)) & 1:
            prev = ch
            continue
        if ch == 10:
            line += 1
        elif ch == 123:
            opens.append(line)
            if depth:
                alternate = False
            depth = 1
            # a line break before it, with only whitespace between
            j = i - 1
            while j >= 0:
                c = data[j]
                if c == 10:
                    above = True
                    break
                if c != 32 and c != 9 and c != 13:
                    break
                j -= 1
        elif ch == 125:
            closes += 1
            if not depth:
                alternate = False
            depth = 0
        elif ch == 40 or ch == 91 or (ch == 58 and prev == 95):
            blank = True
        prev = ch
    if depth:
        alternate = False
    return opens, closes, line, alternate, above, blank


try:
    import cython  # type: ignore[import-untyped]

    _COMPILED = cython.compiled
except ImportError:  # (a pure install without the dev extra)
    _COMPILED = False
_braces = _braces_scan if _COMPILED else _braces_str


def _quoted(text: str) -> bool:
    """Whether a text may hold a quoted literal (Assembly.quoted)."""
    return '"' in text or "'" in text


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
            if chunk.startswith("\n", s) and chunk[s + 1:s + 2] not in NOT_NAME:
                s += 1
            else:
                m = SKIP.match(chunk, s)
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


_BLOCK_NAME = re.compile(r"\s*(?:GRAPH\s+)?(?:<([^>]*)>|([A-Za-z][\w.-]*)?:([\w.%-]*))\s*\{", re.I)


def _block_lines(batch: list[Record], prefixes: dict[str, str]) -> dict[str, int]:
    """Lines of the graph blocks in a batch, for messages about their events (a block
    named by a prefixed name located too)."""
    out: dict[str, int] = {}
    for r in batch:
        m = _BLOCK_NAME.match(r.text)
        if m:
            iri, prefix, local = m.groups()
            if iri is None:
                base = prefixes.get(prefix or "")
                if base is None:
                    continue
                iri = base + local
            out.setdefault(iri, r.line)
    return out

