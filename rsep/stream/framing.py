"""Framing: where one record, event or RDF Message ends and the next begins.

Every reader of RDF text (stream files, RDF Message Logs, the live sources of both
engines) cuts its input here. ``split_records`` cuts TriG / N-Quads text into records (a
directive, a default-graph statement, or one named-graph block) with a small tokenizer
that knows where strings, IRIs and comments are, so that one malformed record is
rejected with its line and column while the others go on (pyoxigraph parses them).
``Framer`` groups records arriving over a connection into frames of whole events.
``split_messages`` cuts an RDF Message Log at its ``@message`` delimiter comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

TOKEN = re.compile(
    # The lookahead lets the scanner skip straight to the characters that can start a token.
    # Strings as unrolled loops (a run of plain characters, then an escape or a lone quote
    # and another run): the strings of (?:[^"\\]|\\.)*, matched many times faster, which a
    # 16 MiB literal needs (one alternation a character: ~8 s a scan).
    r"(?=[\"'<#{}.])"
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r'|(?P<open3>"""|\'\'\')'
    r"|<[^>\s]*>"
    r"|#[^\n]*"
    r"|(?P<brace>[{}])"
    r"|(?P<dot>\.(?=[\s#]|\Z))",
    re.S,
)
DIRECTIVE = re.compile(r"\s*(PREFIX|BASE)\b", re.I)
_ATDIRECTIVE = re.compile(r"\s*@(prefix|base)\b")


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
    sparql_directive = bool(DIRECTIVE.match(text, start))
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
        directive = sparql_directive or bool(_ATDIRECTIVE.match(rec_text))
        records.append(Record(rec_text, line, col, directive))
        depth = 0
        start = skip_ws(tok_end)
        sparql_directive = bool(DIRECTIVE.match(text, start))
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


# ------------------------------------------------------------------ parse errors

_ERR_POS = re.compile(r"line (\d+) (?:column|between columns) (\d+)")
_ERR_POS2 = re.compile(r"at (\d+):(\d+)")


def error_position(err: SyntaxError) -> tuple[int, int]:
    msg = str(err)
    m = _ERR_POS.search(msg) or _ERR_POS2.search(msg)
    if m:
        return int(m.group(1)), int(m.group(2))
    return getattr(err, "lineno", 0) or 0, getattr(err, "offset", 0) or 0


def clean_error(err: SyntaxError) -> str:
    msg = str(err)
    msg = re.sub(r"^Parser error at line \d+ (?:column \d+|between columns \d+ and \d+): ", "", msg)
    msg = re.sub(r"\s*\(line \d+\)\s*$", "", msg)
    return msg


# ------------------------------------------------------------------ frames of a connection

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")


class Framer:
    """Incremental: ``feed`` text as it arrives, get the complete frames; ``finish`` at EOF."""

    def __init__(self, fmt: str = "trig") -> None:
        if fmt not in ("trig", "nquads", "jsonl"):
            raise ValueError(f"format must be trig, nquads or jsonl, not {fmt!r}")
        self.fmt = fmt
        self.header = ""  # TriG directives seen so far
        self._buf = ""
        self._line = 1
        self._scan = 0  # TriG: buffer offset scanned so far, and the brace depth there
        self._depth = 0
        self._items: list[str] = []
        self._kinds = ""  # one letter per item: S statement, B block
        self._graph: str | None = None  # N-Quads: graph of the open block
        self._block: list[str] = []

    def feed(self, text: str) -> list[str]:
        self._buf += text
        if self.fmt == "trig":
            return self._trig(final=False)
        out: list[str] = []
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._line_item(line, out)
        return out

    def finish(self) -> list[str]:
        out: list[str] = []
        if self.fmt == "trig":
            out = self._trig(final=True)
        elif self._buf:
            self._line_item(self._buf, out)
            self._buf = ""
        self._end_block(out)
        self._close(out)
        return out

    # -- TriG

    def _trig(self, final: bool) -> list[str]:
        if final:
            self._scan = self._depth = 0
            return self._trig_lines(len(self._buf), final=True)
        end = self._complete()
        return self._trig_lines(end, final=False) if end > 0 else []

    def _complete(self) -> int:
        """Offset after the last complete record in the buffer, scanning each character
        once (re-tokenizing a large graph block at every read would be quadratic)."""
        text = self._buf
        upto = text.rfind("\n") + 1  # whole lines only: one-line tokens are never cut
        end = 0
        for m in TOKEN.finditer(text, self._scan, upto):
            if m.group("open3") is not None:
                upto = m.start()  # a long string not closed yet: wait for more text
                break
            brace = m.group("brace")
            if brace == "{":
                self._depth += 1
            elif brace == "}":
                self._depth -= 1
                if self._depth <= 0:
                    self._depth, end = 0, m.end()
            elif m.group("dot") is not None and self._depth <= 0:
                end = m.end()
        self._scan = max(upto, self._scan)
        return end

    def _trig_lines(self, end: int, final: bool) -> list[str]:
        records, consumed, self._line = split_records(self._buf[:end], self._line, final)
        out: list[str] = []
        pos = 0
        for r in records:
            at = self._buf.find(r.text, pos)
            if self._kinds and "B" in self._kinds and _BLANK_LINE.search(self._buf, pos, at):
                self._close(out)
            pos = at + len(r.text)
            if r.directive:
                self.header += r.text.strip() + "\n"
            else:
                # A block's record ends with its closing brace; a statement's with a dot.
                self._add("B" if r.text.rstrip().endswith("}") else "S", r.text.strip(), out)
        if self._kinds and "B" in self._kinds and _BLANK_LINE.search(self._buf, pos, consumed):
            self._close(out)
        self._buf = self._buf[consumed:]
        self._scan -= consumed
        if self._scan < 0:
            self._scan = self._depth = 0
        return out

    # -- line formats

    def _line_item(self, line: str, out: list[str]) -> None:
        s = line.strip()
        if self.fmt == "jsonl":
            if s:
                out.append(s + "\n")
            return
        if not s or s.startswith("#"):
            if not s:
                self._end_block(out)
                if "B" in self._kinds:
                    self._close(out)
            return
        graph = _quad_graph(s)
        if graph is not None and graph == self._graph:
            self._block.append(s)
            return
        self._end_block(out)
        if graph is None:
            self._add("S", s, out)
        else:
            self._graph, self._block = graph, [s]

    def _end_block(self, out: list[str]) -> None:
        if self._graph is not None:
            block = "\n".join(self._block)
            self._graph, self._block = None, []
            self._add("B", block, out)

    # -- grouping

    def _add(self, kind: str, text: str, out: list[str]) -> None:
        if kind == "B" and self._kinds.startswith("B") and self._kinds.endswith("S"):
            self._close(out)  # B S+ then a new block: time-last layout
        elif kind == "S" and self._kinds.endswith("B") and self._kinds.startswith("S"):
            self._close(out)  # S+ B then a statement: the next event's time
        elif kind == "B" and "B" in self._kinds:
            self._close(out)  # two blocks never share a frame
        self._items.append(text)
        self._kinds += kind
        if self.fmt == "trig" and kind == "B" and self._kinds.startswith("S"):
            self._close(out)  # S+ B: time-first layout, complete now

    def _close(self, out: list[str]) -> None:
        if self._items:
            body = "\n".join(self._items) + "\n"
            out.append(self.header + body if self.header else body)
            self._items, self._kinds = [], ""


def _quad_graph(line: str) -> str | None:
    """The graph name of an N-Quads line (None: default graph or unparsable)."""
    try:
        quads = list(ox.parse(line, format=ox.RdfFormat.N_QUADS))
    except SyntaxError:
        return None
    if not quads or isinstance(quads[0].graph_name, ox.DefaultGraph):
        return None
    return str(quads[0].graph_name)


# ------------------------------------------------------------------ RDF Messages

# W3C RSP CG, RDF Messages (spec/messages.bs): in N-Triples, N-Quads, Turtle and TriG
# "the delimiter is a comment in the document that matches /^\s*@message/" (the regex
# applies to the comment's text, after its "#").
MESSAGE_DELIMITER = re.compile(r"#[ \t\f\v]*@message")
_LINE_DELIMITER = re.compile(r"^[ \t\f\v]*#[ \t\f\v]*@message[^\n]*", re.M)
# Where a delimiter is, in the text pyoxigraph parses: a statement that ends the message
# parsed before it (the markers locate the message boundaries in one parse of many messages).
MESSAGE_MARK_IRI = "urn:rsep:message-delimiter"
MESSAGE_MARK = f"<{MESSAGE_MARK_IRI}> <{MESSAGE_MARK_IRI}> <{MESSAGE_MARK_IRI}> ."


def find_delimiters(text: str, final: bool) -> tuple[list[tuple[int, int]], int]:
    """The ``@message`` delimiter comments of ``text`` as (start, end) offsets (from the
    "#" to the end of its line), and the offset up to which the text was searched: all of
    it, unless a long string is still open at the end of a non-final text.

    Where every candidate starts its line and no long string (the only token that spans
    lines) is in the text, a regex finds them; otherwise the tokenizer tells comments from
    strings and IRIs.
    """
    if "@message" not in text:
        return [], len(text)
    if '"""' not in text and "'''" not in text:
        found = []
        find = text.find
        i = find("@message")
        while i >= 0:
            start = text.rfind("\n", 0, i) + 1
            m = _LINE_DELIMITER.match(text, start)
            if m is None:
                if MESSAGE_DELIMITER.search(text, start, i + 8):
                    break  # a delimiter after a statement on its line: the tokenizer decides
            else:
                found.append((find("#", start), m.end()))
                i = m.end()
            i = find("@message", i + 1)
        else:
            return found, len(text)
    out: list[tuple[int, int]] = []
    for m in TOKEN.finditer(text):
        if m.group("open3") is not None:
            if not final:
                return out, m.start()
            continue
        tok = m.group(0)
        if tok.startswith("#") and MESSAGE_DELIMITER.match(tok):
            out.append((m.start(), m.end()))
    return out, len(text)


def mark_delimiters(text: str, delimiters: list[tuple[int, int]]) -> str:
    """``text`` with each delimiter comment replaced by the marker statement (lines stay)."""
    parts = []
    pos = 0
    for s, e in delimiters:
        parts.append(text[pos:s])
        parts.append(MESSAGE_MARK)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)
