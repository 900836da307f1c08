"""Framing: where one record, event or RDF Message ends and the next begins.

Every reader of RDF text (stream files, RDF Message Logs, the live sources of both
engines) cuts its input here. ``split_records`` cuts TriG / N-Quads text into records (a
directive, a default-graph statement, or one named-graph block) with a small tokenizer
that knows where strings, IRIs and comments are, so that one malformed record is
rejected with its line and column while the others go on (pyoxigraph parses them).
``Framer`` groups records arriving over a connection into frames of whole events.
``Delimiters`` finds the message delimiters of an RDF Message Log, in either syntax.
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

# W3C RSP CG, RDF Messages (spec/messages.bs at 09500e5, docs/semantics.md "RDF Message
# Logs"). The current text: a log announces itself with a "-messages" version label
# (VERSION "1.2-messages", or @version "1.2-messages" .) and separates its messages with the
# MESSAGE (Turtle / TriG also: @message .) statement. The December 2025 draft, still read:
# "the delimiter is a comment in the document that matches /^\s*@message/" (the regex
# applies to the comment's text, after its "#"). pyoxigraph knows neither delimiter (and
# refuses the version label in N-Quads), so both are found here and never reach it.
MESSAGE_DELIMITER = re.compile(r"#[ \t\f\v]*@message")
VERSION_LABEL = "1.2-messages"
CURRENT, DRAFT = "current", "draft"
# Where a delimiter is, in the text pyoxigraph parses: a statement that ends the message
# parsed before it (the markers locate the message boundaries in one parse of many messages).
MESSAGE_MARK_IRI = "urn:rsep:message-delimiter"
MESSAGE_MARK = f"<{MESSAGE_MARK_IRI}> <{MESSAGE_MARK_IRI}> <{MESSAGE_MARK_IRI}> ."
# Any text that may hold a delimiter or a version label of either syntax.
CANDIDATE = re.compile(r"(?i)message|version")


def might_delimit(text: str, start: int = 0) -> bool:
    """Whether ``text[start:]`` may hold a delimiter or a version label (a case-insensitive
    regex costs ~10 times str.lower and two finds)."""
    low = text[start:].lower() if start else text.lower()
    return "message" in low or "version" in low


def _candidates(text: str) -> Iterator[int]:
    """The offsets of "message" and "version" in ``text``, any case, in order."""
    low = text.lower()
    if len(low) != len(text):  # (a character whose lower case is longer: offsets would move)
        yield from (m.start() for m in CANDIDATE.finditer(text))
        return
    find = low.find
    i, j = find("message"), find("version")
    while i >= 0 or j >= 0:
        if j < 0 or 0 <= i < j:
            yield i
            i = find("message", i + 1)
        else:
            yield j
            j = find("version", j + 1)
# The tokens of a log: those of TOKEN, and the keywords MESSAGE / VERSION (case-insensitive,
# as Turtle's other SPARQL-style keywords) and @message / @version, where they are words of
# their own: not a prefixed name's part (ex:MESSAGE, message:x, ex:a.message), nor a
# literal's language tag ("x"@message).
_MSG_TOKEN = re.compile(
    r"(?=[\"'<#{}.@MmVv])"
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|(?P<str>"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*')"
    r'|(?P<open3>"""|\'\'\')'
    r"|<[^>\s]*>"
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<brace>[{}])"
    r"|(?P<dot>\.(?=[\s#]|\Z))"
    r"|(?<![\w:\-\"'>@])(?<!\w\.)(?P<kw>@?(?i:message|version))(?![\w:\-])",
    re.S,
)
# Lines the quick scan takes without the tokenizer: a delimiter or a version label alone
# on its line (a comment after it allowed), a draft delimiter comment, a comment line.
_LINE = re.compile(
    r"[ \t]*(?:(?P<msg>(?i:MESSAGE)|@message[ \t]*\.)"
    r"|(?P<ver>(?i:VERSION)[ \t]+\"(?P<label>[^\"\\\n]*)\"|@version[ \t]+\"(?P<label2>[^\"\\\n]*)\"[ \t]*\.))"
    r"[ \t]*(?:#[^\n]*)?$"
    r"|[ \t\f\v]*(?P<draft>#[ \t\f\v]*@message)[^\n]*$"
    r"|[ \t]*#[^\n]*$",
    re.M,
)


@dataclass(slots=True)
class Scan:
    """What :meth:`Delimiters.scan` found in a text: the delimiters as (start, end) offsets,
    the version labels' spans (blanked before parsing), the framing errors as (offset,
    reason) (each rejects the message it stands in), the offset up to which the text was
    searched, and whether a delimiter or label at its end waits for more text."""

    cuts: list[tuple[int, int]]
    labels: list[tuple[int, int]]
    errors: list[tuple[int, str]]
    searched: int
    pending: bool = False


class Delimiters:
    """Finds the message delimiters of a log, text after text, keeping the syntax it is in:
    ``syntax`` None until a version label (``CURRENT``) or a ``# @message`` comment
    (``DRAFT``) says it; given as ``CURRENT`` when the transport announces the messages
    (an MQTT payload, a ``version=...-messages`` media type). A log that mixes the two, a
    ``MESSAGE`` without a "-messages" label, a delimiter inside a graph block and an
    ``@message`` without its dot are errors, located."""

    def __init__(self, syntax: str | None = None) -> None:
        self.syntax = syntax
        self.plain_label: str | None = None  # a version label without "-messages"

    def scan(self, text: str, final: bool) -> Scan:
        if not might_delimit(text):
            return Scan([], [], [], len(text))
        if '"""' not in text and "'''" not in text:
            syntax, plain = self.syntax, self.plain_label
            quick = self._quick(text)
            if quick is not None:
                return quick
            self.syntax, self.plain_label = syntax, plain  # the tokens decide afresh
        return self._tokens(text, final)

    def _quick(self, text: str) -> Scan | None:
        """Every candidate on a line of its own, in a comment line or inside an IRI of a
        line without quotes before it: a regex decides; else None, and the tokenizer does."""
        out = Scan([], [], [], len(text))
        pos = 0
        depth = 0  # of graph blocks, counted with strings, IRIs and comments left out
        counted = 0
        braces = "{" in text
        for i in _candidates(text):
            if i < pos:
                continue
            ls = text.rfind("\n", 0, i) + 1
            le = text.find("\n", i)
            le = len(text) if le < 0 else le
            m = _LINE.match(text, ls, le)
            if m is None:
                head = text[ls:i]
                if '"' in head or "'" in head or head.rfind("<") <= head.rfind(">"):
                    return None  # a word, a string, a comment after a statement: tokens decide
                continue
            pos = le
            if braces and (m.group("msg") or m.group("ver") or m.group("draft")):
                depth += _block_depth(text, counted, ls)
                counted = le
            if m.group("msg"):
                s = m.start("msg")
                self._delimiter(out, s, m.end("msg"), text[s] == "@", depth)
            elif m.group("ver"):
                if depth:
                    out.errors.append((m.start("ver"), "a version label inside a graph block"))
                    continue
                self._label(out, m.start("ver"), m.end("ver"), m.group("label") or m.group("label2") or "")
            elif m.group("draft"):
                if depth:
                    out.errors.append((m.start("draft"), "a message delimiter inside a graph block"))
                    continue
                self._draft(out, m.start("draft"), le)
        return out

    def _tokens(self, text: str, final: bool) -> Scan:
        out = Scan([], [], [], len(text))
        depth = 0
        it = _MSG_TOKEN.finditer(text)

        def following(after: int) -> re.Match[str] | None:
            # the next token, None unless only white space stands before it
            for n in it:
                if n.group("comment") is not None:
                    after = n.end()
                    continue
                return n if not text[after:n.start()].strip() else None
            return None

        def waiting(at: int, after: int) -> bool:
            # a keyword at the end of a text that goes on: its statement may not be whole yet
            if final or text[after:].strip():
                return False
            out.pending, out.searched = True, at
            return True

        for m in it:
            if m.group("open3") is not None:
                if not final:
                    out.searched = m.start()
                    return out
                continue
            brace = m.group("brace")
            if brace == "{":
                depth += 1
            elif brace == "}":
                depth = max(depth - 1, 0)
            elif m.group("comment") is not None:
                if MESSAGE_DELIMITER.match(m.group()):
                    if depth:
                        out.errors.append((m.start(), "a message delimiter inside a graph block"))
                    else:
                        self._draft(out, m.start(), m.end())
            elif (kw := m.group("kw")) is not None:
                word = kw.lower()
                start, end = m.start(), m.end()
                if word.endswith("message"):
                    if word[0] == "@":
                        n = following(end)
                        if n is None and waiting(start, end):
                            return out
                        if n is None or n.group("dot") is None:
                            out.errors.append((start, "@message is not followed by '.' (the "
                                                      "directive is \"@message .\")"))
                            continue
                        end = n.end()
                    elif waiting(start, end):
                        return out
                    self._delimiter(out, start, end, word[0] == "@", depth)
                    continue
                n = following(end)
                if n is None and waiting(start, end):
                    return out
                if n is None or n.group("str") is None:
                    out.errors.append((start, f"{kw} is not followed by a version label string"))
                    continue
                end = n.end()
                if word[0] == "@":
                    d = following(end)
                    if d is None and waiting(start, end):
                        return out
                    if d is None or d.group("dot") is None:
                        out.errors.append((start, "@version is not followed by its label and '.'"))
                        continue
                    end = d.end()
                if depth:
                    out.errors.append((start, "a version label inside a graph block"))
                    continue
                self._label(out, start, end, n.group()[1:-1])
        return out

    def _delimiter(self, out: Scan, start: int, end: int, at: bool, depth: int) -> None:
        name = "@message ." if at else "MESSAGE"
        if depth:
            out.errors.append((start, f"{name} inside a graph block (a message delimiter "
                                      "stands between statements and blocks only)"))
        elif self.syntax == DRAFT:
            out.errors.append((start, f"{name} in a log delimited by '# @message' comments (the "
                                      "December 2025 draft): a log is in one syntax or the other"))
        elif self.syntax != CURRENT:
            label = (f"its version label is {self.plain_label!r}" if self.plain_label
                     else "it has no version label")
            out.errors.append((start, f"{name} in a log not in RDF Messages mode ({label}; "
                                      f"VERSION \"{VERSION_LABEL}\" announces one)"))
        else:
            out.cuts.append((start, end))

    def _label(self, out: Scan, start: int, end: int, label: str) -> None:
        if label.endswith("-messages"):
            if self.syntax == DRAFT:
                out.errors.append((start, f"version label {label!r} in a log delimited by "
                                          "'# @message' comments (the December 2025 draft): a "
                                          "log is in one syntax or the other"))
                return
            self.syntax = CURRENT
        else:
            self.plain_label = label
        out.labels.append((start, end))

    def _draft(self, out: Scan, start: int, end: int) -> None:
        if self.syntax == CURRENT:
            out.errors.append((start, "a '# @message' comment (the December 2025 draft's "
                                      "delimiter) in a log with a \"-messages\" version label: "
                                      "a log is in one syntax or the other"))
            return
        self.syntax = DRAFT
        out.cuts.append((start, end))


def find_delimiters(text: str, final: bool) -> tuple[list[tuple[int, int]], int]:
    """The delimiters of ``text`` read from its start, as (start, end) offsets, and the
    offset up to which it was searched (see :class:`Delimiters`)."""
    scan = Delimiters().scan(text, final)
    return scan.cuts, scan.searched


def is_message_log(text: str) -> bool:
    """Whether a text (a log's head) is an RDF Message Log: a "-messages" version label, or
    a delimiter of either syntax (a misplaced one included: the log's reader locates it)."""
    d = Delimiters()
    scan = d.scan(text, final=True)
    return bool(scan.cuts) or d.syntax is not None or any(
        r.startswith(("MESSAGE", "@message")) for _, r in scan.errors)


def mark_delimiters(text: str, delimiters: list[tuple[int, int]],
                    labels: list[tuple[int, int]] | None = None) -> str:
    """``text`` with each delimiter replaced by the marker statement and each version label
    by spaces (lines and columns stay)."""
    spans = sorted([(s, e, True) for s, e in delimiters] + [(s, e, False) for s, e in labels or ()])
    parts = []
    pos = 0
    for s, e, cut in spans:
        parts.append(text[pos:s])
        part = text[s:e]
        parts.append(MESSAGE_MARK + "\n" * part.count("\n") if cut else _NOT_NL.sub(" ", part))
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


_NOT_NL = re.compile(r"[^\n]")
_BRACE = re.compile(r"[{}]")


def _block_depth(text: str, start: int, end: int) -> int:
    """The graph blocks ``text[start:end]`` opens less those it closes (no long string in
    it): each line holding a brace is looked at, its strings and comment left out when it
    has any (a brace in a literal is no block's)."""
    depth = 0
    line_end = -1
    for m in _BRACE.finditer(text, start, end):
        if m.start() < line_end:
            continue
        ls = max(text.rfind("\n", start, m.start()) + 1, start)
        le = text.find("\n", m.start(), end)
        line_end = end if le < 0 else le
        line = text[ls:line_end]
        if '"' in line or "'" in line or "#" in line:
            line = _NOT_BRACES.sub("", line)
        depth += line.count("{") - line.count("}")
    return depth
# what is not a graph block's brace, for counting them: strings, IRIs, comments, the rest
_NOT_BRACES = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'|<[^>\s]*>|#[^\n]*|[^{}"\'<#]+')
