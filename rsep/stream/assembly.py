"""Assembling parsed quads into events, whichever reader parsed them.

A run of consecutive quads of one named graph is one event's content; its time comes
from a triple ``<g> prov:generatedAtTime T`` in the default graph (or another configured
time predicate), before or after the graph, or (``in_graph``) from inside the graph.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby, repeat
from operator import attrgetter, itemgetter
from typing import cast

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.time import (
    MAX_DIGITS,
    PROV,
    XSD,
    TimeConfig,
    TimeError,
    TimeKind,
    timestamp_from_literal,
)

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
_XSD_INTEGER_NODE = ox.NamedNode(_XSD_INTEGER)
# An empty graph block "<g> { }" (an event with no triples: a heartbeat that advances
# time) parses to no quad at all: a marker triple put into it before parsing (on the
# line of its "{": lines stay) keeps the graph's run, and is taken out again.
EMPTY_BLOCK = re.compile(r"\{((?:[ \t\r\n]|#[^\n]*\n)*)\}")
BLANK_LABEL = re.compile("_:")  # the regex engine finds it faster than str's "in"
_MARK = ox.NamedNode("urn:rsep:empty-graph")
_MARK_TRIPLE = ox.Triple(_MARK, _MARK, _MARK)
_MARK_TEXT = "<urn:rsep:empty-graph> <urn:rsep:empty-graph> <urn:rsep:empty-graph> ."

# A run of consecutive parsed quads of one graph, (graph, content): a default-graph run keeps
# its quads (time metadata), a named graph's run the triples of its event.
Run = tuple[ox.NamedNode | ox.BlankNode | ox.DefaultGraph, list[ox.Quad] | tuple[ox.Triple, ...]]


def _named_nodes(iris: Iterable[str]) -> Iterator[ox.NamedNode]:
    for iri in iris:
        try:
            yield ox.NamedNode(iri)
        except ValueError:
            continue  # (no parsed predicate is such an IRI)


def mark_empty(text: str) -> str:
    return EMPTY_BLOCK.sub(lambda m: "{" + _MARK_TEXT + m.group(1) + "}", text)


def unmark(groups: list[Run]) -> list[Run]:
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



NOT_NAME = frozenset(" \t\r\n#@PpBb")  # may start whitespace, a comment or a directive
SKIP = re.compile(
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


class Assembly:
    """Turns parsed quads into events, whichever path parsed them.

    A run of consecutive quads of one named graph (default-graph statements in
    between do not end it) is one event's content; it is complete when a quad of
    another named graph follows, or at the end of the file. Emitted items are
    collected in ``out`` for the reader to yield.
    """

    def __init__(self, stream: str, origin: str, time: TimeConfig, max_pending: int) -> None:
        self.stream = stream
        self.origin = origin
        self.time = time
        self.max_pending = max_pending
        roles: dict[str, str] = {}
        # The same precedence as TimeConfig.role: point, then start, then end.
        for role, preds in (("end", time.end), ("start", time.start), ("point", time.point)):
            roles.update(dict.fromkeys(preds, role))
        self.roles = roles
        self.point_predicates = frozenset(p for p, r in roles.items() if r == "point")
        # the same as nodes: checked without making a string of each time triple's predicate
        self.point_nodes = frozenset(_named_nodes(self.point_predicates))
        self.in_graph = time.in_graph
        self.opened: dict[str, _Open] = {}
        self.orphans: dict[str, int] = {}
        self.current: _Open | None = None
        self.out: list[Event | Rejected] = []
        self.events = 0
        self.bnodes = True  # False when the text being assembled cannot hold blank nodes
        # False when it holds no quote: every literal in it is then a bare number or boolean
        # token, and one of ASCII digits alone an INTEGER, so an xsd:integer
        self.quoted = True
        self.marked = False  # True once a record's empty graph block holds the marker triple

    def points(self, groups: list[Run], lines: list[int]) -> bool:
        """Assemble a chunk of the common shape in bulk; False (and nothing done) for any other.

        The shape: runs alternate between one default-graph quad ``<g> <point predicate>
        "n"^^xsd:integer`` and the triples of that graph ``<g>``, a graph not seen before,
        without blank nodes. ``lines`` holds the line of each graph run. The checks and
        conversions map over the whole chunk at once instead of stepping through it run
        by run; the result is what ``runs`` would make of it.
        """
        if len(groups) % 2 or not groups:
            return False
        graphs, items = zip(*groups, strict=True)
        if set(map(type, graphs[::2])) != {_DEFAULT} or set(map(type, graphs[1::2])) != {_NAMED}:
            return False
        times = items[::2]
        if set(map(len, times)) != {1}:
            return False
        return self.stamped(cast("tuple[ox.NamedNode, ...]", graphs[1::2]), list(map(_FIRST, times)),
                            cast("tuple[tuple[ox.Triple, ...], ...]", items[1::2]), lines)

    def stamped(self, nodes: Sequence[ox.NamedNode], quads: list[ox.Quad],
                triples: Sequence[tuple[ox.Triple, ...]], lines: list[int]) -> bool:
        """:meth:`points` of a chunk given as its graphs (named nodes), the time quad of each
        and the triples of each (a reader that has them apart skips making the runs)."""
        if self.bnodes or self.in_graph or not nodes:
            return False
        # Each time triple is about the graph that follows it, with a point predicate ...
        if tuple(map(_SUBJECT, quads)) != tuple(nodes) \
                or not self.point_nodes.issuperset(map(_PREDICATE, quads)):
            return False
        # ... and an xsd:integer in ASCII digits (what runs reads without timestamp_from_literal).
        objects = list(map(_OBJECT, quads))
        if set(map(type, objects)) != {_LITERAL} \
                or (self.quoted and set(map(_DATATYPE, objects)) != {_XSD_INTEGER_NODE}):
            return False
        lexicals = list(map(_VALUE, objects))
        digits = "".join(lexicals)
        if not (all(lexicals) and digits.isascii() and digits.isdigit()) \
                or max(map(len, lexicals)) > MAX_DIGITS:  # (the general path refuses it, located)
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
                                and len(lexical) <= MAX_DIGITS
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
                    pass  # not a plain integer: read it as a timestamp literal below
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


def content_lines(chunk: str) -> list[int]:
    """0-based numbers of the lines of an N-Quads chunk that hold a statement."""
    out = []
    for i, raw in enumerate(chunk.split("\n")):
        s = raw.strip()
        if s and not s.startswith("#"):
            out.append(i)
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
