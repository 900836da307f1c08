"""Timestamped update streams of a background graph (``rsep run --graph-updates IRI=PATH``).

Two forms, told apart by the file's name:

- ``*.ru`` (also ``.rq``, ``.sparql``): SPARQL 1.1 Update operations, each record opened by
  a comment line ``# @time T`` (an xsd:integer, or an xsd:dateTime as stream files give
  them) and running to the next one. The text before the first such line may only hold
  ``PREFIX`` / ``BASE`` declarations (and comments); they apply to every record. The
  update is applied to the graph as its default graph (rsep.sparql.update), by pyoxigraph.
- anything else: versions, as a stream file of timestamped named graphs (TriG / N-Quads,
  read by rsep.stream.files): each graph is the whole graph from its time on.

A record is rejected, with its file, line and column, when its time does not read, goes
backwards, or its update does not parse or would reach the network (``LOAD``,
``SERVICE``); the others are read on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile
from rsep.stream.framing import clean_error, error_position
from rsep.stream.time import TimeConfig, TimeError, TimeKind, format_time, timestamp_from_literal

UPDATE_SUFFIXES = (".ru", ".rq", ".sparql")
_MARK = re.compile(r"^[ \t]*#[ \t]*@time\b[ \t]*(.*?)[ \t]*\r?$", re.M)
# what a prologue may hold: comments and PREFIX / BASE declarations
_PROLOGUE = re.compile(r"\s+|#[^\n]*|PREFIX\s+[^\s:]*:\s*<[^<>\s]*>|BASE\s*<[^<>\s]*>", re.I)
# IRIs, strings and comments, masked before looking for keywords
_OPAQUE = re.compile(r'<[^<>"{}|^`\\\s]*>|"""(?:[^"\\]|\\.|"(?!""))*"""'
                     r"|'''(?:[^'\\]|\\.|'(?!''))*'''|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
                     r"|#[^\n]*")
_NETWORK = re.compile(r"(?<![\w:?$])(LOAD|SERVICE)\b(?!:)", re.I)


@dataclass(frozen=True, slots=True)
class GraphUpdate:
    """One change of a time-varying graph (000 Def. 2), stamped ``time``: the graph becomes
    ``version`` from then on, or the SPARQL 1.1 Update ``update`` is applied to it."""

    graph: str
    time: int
    kind: TimeKind
    version: tuple[ox.Triple, ...] | None = None
    update: str | None = None
    origin: str = ""  # "file:line" of the record, or the request that made it


def check_update(text: str) -> tuple[int, int, str] | None:
    """Why an update cannot be applied, as (line, column, reason) in ``text``; None if it
    can: it parses (pyoxigraph) and reaches no network."""
    masked = _OPAQUE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    m = _NETWORK.search(masked)
    if m:
        line = masked.count("\n", 0, m.start()) + 1
        col = m.start() - (masked.rfind("\n", 0, m.start()) + 1) + 1
        return line, col, f"{m.group(1).upper()} is refused: an update of a background graph " \
                          "cannot reach the network"
    try:
        ox.Store().update(text)  # an empty store: the parse is the cost
    except SyntaxError as e:
        line, col = error_position(e)
        return line, col, f"the update does not parse: {_short(clean_error(e))}"
    return None


def _short(msg: str) -> str:
    """pyoxigraph's message without its position (given apart) and its list of the
    hundred characters it expected."""
    msg = re.sub(r"^error at \d+:\d+: ", "", msg).split("\n", 1)[0]
    return msg if len(msg) <= 100 else msg[:msg.find(",", 60) + 1 or 100] + " ..."


def read_updates(graph: str, path: str | Path, *, time: TimeConfig | None = None
                 ) -> Iterator[GraphUpdate | Rejected]:
    """The update records of one file, in file order, with the rejected ones."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"graph update file not found: {p}")
    if p.suffix.lower() in UPDATE_SUFFIXES:
        items: Iterable[GraphUpdate | Rejected] = _sparql(graph, str(p),
                                                          p.read_text(encoding="utf-8"))
    else:
        items = (_version(graph, it) for it in StreamFile(p, graph, time=time))
    yield from _in_order(items)


def sparql_records(graph: str, origin: str, text: str) -> Iterator[GraphUpdate | Rejected]:
    """The records of an update file's text (see the module's text)."""
    yield from _in_order(_sparql(graph, origin, text))


def _version(graph: str, it: Event | Rejected) -> GraphUpdate | Rejected:
    if isinstance(it, Rejected):
        return it
    return GraphUpdate(graph, it.time, it.kind, version=it.triples, origin=it.origin)


def _sparql(graph: str, origin: str, text: str) -> Iterator[GraphUpdate | Rejected]:
    marks = list(_MARK.finditer(text))
    head = text[:marks[0].start()] if marks else text
    pos = 0
    while pos < len(head) and (m0 := _PROLOGUE.match(head, pos)) is not None and m0.end() > pos:
        pos = m0.end()
    prologue = head
    if pos < len(head):
        line = head.count("\n", 0, pos) + 1
        yield Rejected(graph, origin, line, pos - (head.rfind("\n", 0, pos) + 1) + 1,
                       "only PREFIX and BASE declarations may stand before the first "
                       "'# @time' line (an update needs a time)", head.strip())
        prologue = ""
    base_lines = prologue.count("\n")
    for i, m in enumerate(marks):
        line = text.count("\n", 0, m.start()) + 1
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end():end]
        stamp = m.group(1)
        try:
            ts = timestamp_from_literal(stamp, None)
        except TimeError as e:
            yield Rejected(graph, origin, line, m.start(1) - m.start() + 1,
                           f"'# @time {stamp}': {e}", m.group().strip())
            continue
        if not body.strip():
            yield Rejected(graph, origin, line, 1, f"'# @time {stamp}' is followed by no update",
                           m.group().strip())
            continue
        why = check_update(prologue + body)
        if why is not None:
            # the body starts after the mark's line ends (body[0] is that line's newline)
            bl, bc, reason = why
            yield Rejected(graph, origin, line + bl - base_lines - 1 if bl > base_lines else bl,
                           bc, reason, body.strip())
            continue
        yield GraphUpdate(graph, ts.value, ts.kind, update=prologue + body,
                          origin=f"{origin}:{line}")


def _in_order(items: Iterable[GraphUpdate | Rejected]) -> Iterator[GraphUpdate | Rejected]:
    """A graph's updates in non-decreasing time, of one kind; the others rejected."""
    last: GraphUpdate | None = None
    for it in items:
        if isinstance(it, Rejected):
            yield it
            continue
        file, _, line = it.origin.rpartition(":")
        if last is not None and it.kind is not last.kind:
            yield Rejected(it.graph, file, int(line or 0), 0,
                           f"a {it.kind.value} time, after {last.kind.value} ones")
            continue
        if last is not None and it.time < last.time:
            yield Rejected(it.graph, file, int(line or 0), 0,
                           f"time {format_time(it.time, it.kind)} goes backwards (after "
                           f"{format_time(last.time, last.kind)}): a graph's updates are "
                           "applied in time order")
            continue
        last = it
        yield it
