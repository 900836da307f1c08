"""Stream files of JSON lines: one event per line.

``{"graph": IRI, "time": T, "triples": "<s> <p> <o> ."}`` with ``T`` an integer or an
xsd:dateTime string; ``"start"`` and ``"end"`` instead of ``"time"`` stamp an interval.
``"triples"`` is N-Triples or Turtle text. A bad line is rejected with its line number
and the reason; the other lines go on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.files import scope_blank_nodes
from rsep.stream.time import TimeError, TimeKind, Timestamp, parse_datetime_ms

SUFFIXES = (".jsonl", ".ndjson")
_INVALID = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8 (surrogateescape)


def _stamp(v: object) -> Timestamp:
    if isinstance(v, bool) or v is None:
        raise TimeError(f"timestamp {v!r} is neither an integer nor an xsd:dateTime")
    if isinstance(v, int):
        return Timestamp(v, TimeKind.ABSTRACT)
    if isinstance(v, str):
        try:
            return Timestamp(int(v), TimeKind.ABSTRACT)
        except ValueError:
            return Timestamp(parse_datetime_ms(v), TimeKind.DATETIME)
    raise TimeError(f"timestamp {v!r} is neither an integer nor an xsd:dateTime")


def parse_lines(lines: Iterable[str], stream: str, origin: str,
                first_line: int = 1) -> Iterator[Event | Rejected]:
    """Events of JSON lines (blank lines and lines starting with # are skipped)."""
    n = 0
    for i, raw in enumerate(lines, first_line):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        bad = _INVALID.search(raw)
        if bad is not None:
            yield Rejected(stream, origin, i, bad.start() + 1,
                           f"invalid UTF-8: byte 0x{ord(bad.group()) - 0xDC00:02X}",
                           _INVALID.sub("\ufffd", s[:200]))
            continue
        try:
            d = json.loads(s)
            if not isinstance(d, dict):
                raise ValueError("a line must be a JSON object")
            graph = d.get("graph")
            if not isinstance(graph, str) or not graph:
                raise ValueError('"graph" (the event graph\'s IRI) is missing')
            if "time" in d:
                start = end = _stamp(d["time"])
            elif "start" in d or "end" in d:
                start = _stamp(d.get("start", d.get("end")))
                end = _stamp(d.get("end", d.get("start")))
            else:
                raise ValueError(f'event <{graph}> has no "time" (or "start"/"end")')
            if start.kind is not end.kind:
                raise ValueError(f"<{graph}> mixes dateTime and integer times")
            if end.value < start.value:
                raise ValueError(f"interval of <{graph}> ends before it starts")
            body = d.get("triples", "")
            if not isinstance(body, str):
                raise ValueError('"triples" must be N-Triples or Turtle text')
            triples = [q.triple for q in ox.parse(body, format=ox.RdfFormat.TURTLE)]
        except (ValueError, SyntaxError, TimeError, MemoryError) as e:
            yield Rejected(stream, origin, i, 0, (str(e).splitlines() or [type(e).__name__])[0],
                           s[:200])
            continue
        except RecursionError:  # JSON nested deeper than the decoder's recursion
            yield Rejected(stream, origin, i, 0, "JSON nested too deeply", s[:200])
            continue
        n += 1
        if any(isinstance(t.subject, ox.BlankNode) or isinstance(t.object, ox.BlankNode)
               for t in triples):
            triples = scope_blank_nodes(triples, f"e{n}")
        yield Event(stream=stream, graph=graph, start=start.value, end=end.value,
                    triples=tuple(triples), kind=start.kind, origin=f"{origin}:{i}")


class JsonlStreamFile:
    """Events of one JSON-lines stream file, in file order, plus rejected lines."""

    def __init__(self, path: str | Path, stream: str) -> None:
        self.path = Path(path)
        self.stream = stream

    def __iter__(self) -> Iterator[Event | Rejected]:
        # (an invalid byte kept as a lone surrogate: its line is rejected, not read altered)
        with open(self.path, encoding="utf-8", errors="surrogateescape") as f:
            yield from parse_lines(f, self.stream, str(self.path))
