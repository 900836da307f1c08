"""Writing RDF Message Logs: one message per event (or per evaluation's result).

A message holds the event's triples in its named graph ``<g>`` and, in the default graph,
its time in PROV-O: ``<g> prov:generatedAtTime T`` for a point, ``<g> prov:startedAtTime S``
and ``<g> prov:endedAtTime E`` for an interval (``T`` an ``xsd:integer`` on an abstract
timeline, else an ``xsd:dateTime``). rsep.stream.messages reads such a message back as the
same event: its named graph whose time the message gives names it, and the statements
about the message's graphs are metadata, not content. An event's other named graphs
(``Event.graphs``) are written as the message's other named graphs. Text logs close every message with a ``# @message`` delimiter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import pyoxigraph as ox

from rsep.stream.time import PROV, XSD, TimeKind, format_time

FORMATS = ("rdfm-trig", "rdfm-nquads", "jelly")
DELIMITER = "# @message\n"


def time_literal(t: int, kind: TimeKind | None) -> str:
    if kind is TimeKind.DATETIME:
        return f'"{format_time(t, kind)}"^^<{XSD}dateTime>'
    return f'"{t}"^^<{XSD}integer>'


class MessageWriter:
    """``write`` one message at a time; ``close`` at the end. ``out`` is text for the text
    formats, bytes for Jelly."""

    def __init__(self, out: IO[str] | IO[bytes], fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown message log format {fmt!r} (expected one of {', '.join(FORMATS)})")
        self.fmt = fmt
        self.out = out
        self.count = 0
        self._jelly = None
        if fmt == "jelly":
            # (imported here: pyjelly and Protobuf cost the runs that write no Jelly start-up time)
            from rsep.stream.jelly import JellyWriter

            self._jelly = JellyWriter(out)  # type: ignore[arg-type]

    def write(self, graph: str, start: int, end: int, kind: TimeKind | None,
              triples: Sequence[str], *, inline: bool = False,
              graphs: Sequence[tuple[str, Sequence[str]]] = ()) -> None:
        """One message: the event ``graph`` over [start, end] with ``triples`` (N-Triples
        statements, without their final dot). ``inline``: the triples in the default graph,
        the time a statement about the resource ``graph`` among them (as an observation
        carries its own ``sosa:resultTime``); read back, the message's event is named
        ``graph`` and its triples include the time statement. ``graph`` is an IRI, or (inline)
        an N-Triples term: ``<iri>`` or ``_:label``. ``graphs``: the event's other named
        graphs (IRI, N-Triples statements), written as named graphs of the message."""
        g = graph if graph.startswith(("<", "_:")) else f"<{graph}>"
        if start == end:
            meta = [f"{g} <{PROV}generatedAtTime> {time_literal(start, kind)}"]
        else:
            meta = [f"{g} <{PROV}startedAtTime> {time_literal(start, kind)}",
                    f"{g} <{PROV}endedAtTime> {time_literal(end, kind)}"]
        self.count += 1
        in_g = "" if inline else f" {g}"
        if self._jelly is not None:
            text = "".join(f"{m} .\n" for m in meta) + "".join(f"{t}{in_g} .\n" for t in triples)
            text += "".join(f"{t} <{k}> .\n" for k, ts in graphs for t in ts)
            self._jelly.write(ox.parse(text, format=ox.RdfFormat.N_QUADS))
            return
        out: IO[str] = self.out  # type: ignore[assignment]
        if self.fmt == "rdfm-nquads":
            kept = "".join(f"{t} <{k}> .\n" for k, ts in graphs for t in ts)
        else:
            kept = "".join(f"<{k}> {{\n" + "".join(f"  {t} .\n" for t in ts) + "}\n" for k, ts in graphs)
        if inline:
            out.write("".join(f"{t} .\n" for t in (*triples, *meta)) + kept + DELIMITER)
        elif self.fmt == "rdfm-nquads":
            out.write("".join(f"{m} .\n" for m in meta) + "".join(f"{t} {g} .\n" for t in triples)
                      + kept + DELIMITER)
        else:
            body = "".join(f"  {t} .\n" for t in triples)
            out.write("".join(f"{m} .\n" for m in meta) + f"{g} {{\n{body}}}\n" + kept + DELIMITER)

    def close(self) -> None:
        if self._jelly is not None:
            self._jelly.close()
        else:
            self.out.flush()
