"""Writing RDF Message Logs: one message per event (or per evaluation's result).

A message holds the event's triples in its named graph ``<g>`` and, in the default graph,
its time in PROV-O: ``<g> prov:generatedAtTime T`` for a point, ``<g> prov:startedAtTime S``
and ``<g> prov:endedAtTime E`` for an interval (``T`` an ``xsd:integer`` on an abstract
timeline, else an ``xsd:dateTime``). rsep.stream.messages reads such a message back as the
same event: its named graph whose time the message gives names it, and the statements
about the message's graphs are metadata, not content. An event's other named graphs
(``Event.graphs``) are written as the message's other named graphs.

Text logs are written in the current syntax of RDF Messages (spec/messages.bs): the version
label ``VERSION "1.2-messages"`` first, and every message closed by ``MESSAGE`` (a last
delimiter opens no message, so a log can be read while it is written: each message is
whole once its delimiter is out). ``rdfm-draft-trig`` / ``rdfm-draft-nquads``: the December
2025 draft's form, no label and ``# @message`` comments, for readers of that draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import pyoxigraph as ox

from rsep.stream.time import PROV, XSD, TimeKind, format_time

FORMATS = ("rdfm-trig", "rdfm-nquads", "jelly")
DRAFT_FORMATS = ("rdfm-draft-trig", "rdfm-draft-nquads")  # rsep convert --to only
DELIMITER = "MESSAGE\n"
HEADER = 'VERSION "1.2-messages"\n'  # (framing.VERSION_LABEL)
DRAFT_DELIMITER = "# @message\n"


def time_literal(t: int, kind: TimeKind | None) -> str:
    if kind is TimeKind.DATETIME:
        return f'"{format_time(t, kind)}"^^<{XSD}dateTime>'
    return f'"{t}"^^<{XSD}integer>'


class MessageWriter:
    """``write`` one message at a time; ``close`` at the end. ``out`` is text for the text
    formats, bytes for Jelly."""

    def __init__(self, out: IO[str] | IO[bytes], fmt: str) -> None:
        if fmt not in FORMATS + DRAFT_FORMATS:
            raise ValueError(f"unknown message log format {fmt!r} (expected one of "
                             f"{', '.join(FORMATS + DRAFT_FORMATS)})")
        self.draft = fmt.startswith("rdfm-draft-")
        self.fmt = fmt.replace("-draft", "")
        self.delimiter = DRAFT_DELIMITER if self.draft else DELIMITER
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
        if self.count == 1 and not self.draft:
            out.write(HEADER)
        delimiter = self.delimiter
        if self.fmt == "rdfm-nquads":
            kept = "".join(f"{t} <{k}> .\n" for k, ts in graphs for t in ts)
        else:
            kept = "".join(f"<{k}> {{\n" + "".join(f"  {t} .\n" for t in ts) + "}\n" for k, ts in graphs)
        if inline:
            out.write("".join(f"{t} .\n" for t in (*triples, *meta)) + kept + delimiter)
        elif self.fmt == "rdfm-nquads":
            out.write("".join(f"{m} .\n" for m in meta) + "".join(f"{t} {g} .\n" for t in triples)
                      + kept + delimiter)
        else:
            body = "".join(f"  {t} .\n" for t in triples)
            out.write("".join(f"{m} .\n" for m in meta) + f"{g} {{\n{body}}}\n" + kept + delimiter)

    def write_quads(self, quads: Sequence[ox.Quad]) -> None:
        """One message of any quads, as they are (an empty one too): what a message
        stream's serializer writes (the interoperability tests' round trips)."""
        self.count += 1
        if self._jelly is not None:
            self._jelly.write(quads)
            return
        out: IO[str] = self.out  # type: ignore[assignment]
        if self.count == 1 and not self.draft:
            out.write(HEADER)
        if self.fmt == "rdfm-nquads":
            body = "".join(f"{q} .\n" for q in quads)
        else:
            dg = [q for q in quads if q.graph_name.__class__ is ox.DefaultGraph]
            body = "".join(f"{q.triple} .\n" for q in dg)
            named: dict[str, list[str]] = {}
            for q in quads:
                if q.graph_name.__class__ is not ox.DefaultGraph:
                    named.setdefault(str(q.graph_name), []).append(f"  {q.triple} .\n")
            body += "".join(f"{g} {{\n" + "".join(ts) + "}\n" for g, ts in named.items())
        out.write(body + self.delimiter)

    def close(self) -> None:
        if self._jelly is not None:
            self._jelly.close()
        else:
            self.out.flush()


def payload(text: str) -> str:
    """One message's text as a transport carries it, one message each (MQTT, SSE): without
    the log's version label (the transport says what it carries) and its delimiter."""
    text = text.removeprefix(HEADER)
    return text.removesuffix(DELIMITER) if text.endswith(DELIMITER) else text.removesuffix(DRAFT_DELIMITER)


def split_log(text: str) -> list[str]:
    """The messages' texts of a text log MessageWriter wrote (each without its delimiter):
    what one message per MQTT or SSE item carries."""
    text = text.removeprefix(HEADER)
    delimiter = DELIMITER if not text.startswith(DRAFT_DELIMITER) and DRAFT_DELIMITER not in text \
        else DRAFT_DELIMITER
    return text.split(delimiter)[:-1]
