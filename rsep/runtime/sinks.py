"""Writing output streams: JSON lines, CSV, TSV, an aligned table, TriG, RDF Message Logs."""

from __future__ import annotations

import json
import re
import sys
from typing import IO

from rsep.algebra.events import FROM_VAR, TO_VAR
from rsep.runtime.engine import Output
from rsep.stream.writer import FORMATS as MESSAGE_FORMATS
from rsep.stream.writer import MessageWriter

# rdfm-*: RDF Message Logs (W3C RSP CG), one message per evaluation (rsep.stream.writer)
FORMATS = ("jsonl", "csv", "tsv", "table", "trig", *MESSAGE_FORMATS)

# the interval columns of an event query's table, as its jsonl objects name them
_SPAN = ("from", "to", "start")

_LIT = re.compile(r'^"(.*)"(?:@[A-Za-z0-9\-]+|\^\^<[^>]*>)?$', re.S)


# One encoder for every line: json.dumps(..., ensure_ascii=False) builds a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode

_PLAIN_TYPES = {
    f"<http://www.w3.org/2001/XMLSchema#{t}>"
    for t in ("integer", "decimal", "double", "float", "boolean", "string", "long", "int")
}


def display(term: str | None) -> str:
    """A term for people: numbers, booleans and plain strings by their value, the rest as N-Triples."""
    if term is None:
        return ""
    if term.startswith('"'):
        lex, _, dt = term.rpartition("^^")
        if dt in _PLAIN_TYPES:
            return csv_value(lex)
    return term


def csv_value(term: str | None) -> str:
    """SPARQL 1.1 CSV results: IRIs bare, literals by their lexical form."""
    if term is None:
        return ""
    if term.startswith("<") and term.endswith(">"):
        return term[1:-1]
    m = _LIT.match(term)
    if m:
        return json.loads('"' + m.group(1) + '"') if "\\" in m.group(1) else m.group(1)
    return term


# a SPARQL / Turtle prefix declaration: PREFIX p: <iri> or @prefix p: <iri> .
_PREFIX_DECL = re.compile(r"(?:^|\s)(?:@prefix|PREFIX)\s+([A-Za-z][\w.-]*)?:\s*<([^>\s]*)>",
                          re.IGNORECASE)
# a local name a prefixed name can carry as it is (SPARQL's PN_LOCAL, without escapes: an
# IRI whose rest needs one is shown whole)
_LOCAL = re.compile(r"(?:[A-Za-z0-9_](?:[\w.-]*[\w-])?)?")


def read_prefixes(text: str) -> dict[str, str]:
    """The prefix declarations of a query or a Turtle / SPARQL prologue, in text order (a
    prefix declared twice keeps its last IRI, as in SPARQL); comments are skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.lstrip().startswith("#"):
            for m in _PREFIX_DECL.finditer(line):
                out[m.group(1) or ""] = m.group(2)
    return out


class Prefixes:
    """IRIs written as prefixed names (``<http://e.org/a>`` as ``:a``), for people: the longest
    namespace that leaves a plain local name wins; an IRI no namespace fits stays whole."""

    def __init__(self, declared: dict[str, str]) -> None:
        by_iri: dict[str, str] = {}
        for p, iri in declared.items():
            by_iri.setdefault(iri, p)  # (one IRI under two prefixes: the first declared)
        self.namespaces = sorted(by_iri.items(), key=lambda kv: -len(kv[0]))

    def __bool__(self) -> bool:
        return bool(self.namespaces)

    def iri(self, iri: str) -> str | None:
        for ns, p in self.namespaces:
            if iri.startswith(ns) and _LOCAL.fullmatch(iri[len(ns):]):
                return f"{p}:{iri[len(ns):]}"
        return None

    def term(self, text: str) -> str:
        """A displayed term (:func:`display`) with its IRI, or its literal's datatype, prefixed."""
        if text.startswith("<") and text.endswith(">"):
            return self.iri(text[1:-1]) or text
        if text.startswith('"') and text.endswith(">") and '"^^<' in text:
            lex, _, dt = text.rpartition("^^<")
            short = self.iri(dt[:-1])
            return f"{lex}^^{short}" if short else text
        return text


def open_sink(path: str | None, fmt: str, *, with_query: bool = False,
              stdout: IO[str] | None = None, prefixes: dict[str, str] | None = None) -> FormatSink:
    """Where ``rsep run`` writes results: standard output (``path`` None), a file, or
    ``mqtt://HOST:PORT/TOPIC`` (each result item one MQTT message), or
    ``kafka://HOST:PORT/TOPIC`` (one Kafka record each). Closing the sink closes
    what it opened."""
    if path is None:
        return FormatSink(stdout or sys.stdout, fmt, with_query=with_query, prefixes=prefixes)
    if fmt not in FORMATS:  # before a file is created or a broker connected
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if path.startswith("mqtt://"):
        # (imported here: a run that writes files does not load an MQTT client)
        from rsep.runtime.mqtt_output import MqttOutput

        return FormatSink(MqttOutput(path, fmt), fmt, with_query=with_query, owned=True)
    if path.startswith("kafka://"):
        # (imported here: a run that writes no Kafka topic loads no Kafka producer)
        from rsep.runtime.kafka_output import KafkaOutput

        return FormatSink(KafkaOutput(path, fmt), fmt, with_query=with_query, owned=True)
    return FormatSink(open(path, "w", encoding="utf-8"), fmt, with_query=with_query, owned=True,
                      prefixes=prefixes)


class FormatSink:
    """Results (``Output``) written in one of :data:`FORMATS` to a text output: a
    :class:`~rsep.stream.protocol.Sink` of ``Output``. ``owned``: ``close`` closes ``out``.
    ``prefixes`` (prefix -> namespace IRI): the table shows IRIs as prefixed names."""

    def __init__(self, out: IO[str], fmt: str, *, with_query: bool = False,
                 owned: bool = False, prefixes: dict[str, str] | None = None) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
        self.out = out
        self.owned = owned
        self.fmt = fmt
        self.with_query = with_query
        self.count = 0
        self.prefixes = Prefixes(prefixes or {})
        self._header: tuple | None = None
        self._writer = None
        if fmt == "csv":
            import csv  # here: the other formats' runs do without it

            self._writer = csv.writer(out, lineterminator="\n")
        self._group: tuple | None = None
        self._rows: list[Output] = []
        self._messages: MessageWriter | None = None
        self._triples: list[str] = []
        # an output of items (rsep.runtime.mqtt_output): told where each item ends
        self._end_item = getattr(out, "end_item", None)
        if fmt in MESSAGE_FORMATS:
            # Jelly is binary: it goes to the text stream's underlying buffer.
            self._messages = MessageWriter(_binary(out) if fmt == "jelly" else out, fmt)

    def write(self, o: Output) -> None:
        self.count += 1
        if self._messages is not None:
            self._message(o)
        else:
            getattr(self, "_" + self.fmt)(o)

    def close(self) -> None:
        if self.fmt == "table":
            self._flush_table()
        elif self.fmt == "trig" and self._group is not None:
            self.out.write("}\n")
        elif self._messages is not None:
            self._flush_message()
            self._messages.close()
        self.out.flush()
        if self.owned:
            self.out.close()

    def flush(self) -> None:
        """What was written so far reaches the output (a batch's results on Spark)."""
        self.out.flush()

    def end_evaluation(self) -> None:
        """The last output written completes its evaluation: its RDF Message goes out now,
        not when the next evaluation's first output comes (a live consumer's latency)."""
        if self._messages is not None:
            self._flush_message()

    def _message(self, o: Output) -> None:
        if o.triple is None:
            raise ValueError(f"--format {self.fmt} needs a CONSTRUCT or DESCRIBE query")
        group = (o.query, o.time, o.op, o.kind)
        if group != self._group:
            self._flush_message()
            self._group = group
        self._triples.append(o.triple)

    def _flush_message(self) -> None:
        """The evaluation's result as one RDF Message, named as --format trig names it."""
        if self._group is None or self._messages is None:
            return
        query, t, op, kind = self._group
        name = f"urn:rsep:result:{query}:{t}{':delete' if op == 'delete' else ''}"
        self._messages.write(name, t, t, kind, self._triples)
        self._triples = []
        self._group = None
        if self._end_item is not None:
            self._end_item()

    # -- formats

    def _jsonl(self, o: Output) -> None:
        d = o.to_json()
        if self.with_query:
            d = {"query": o.query, **d}
        self.out.write(_ENCODE(d) + "\n")
        if self._end_item is not None:
            self._end_item()

    def _columns(self, o: Output) -> tuple[str, ...]:
        if o.bindings is not None:
            return o.variables
        if o.triple is not None:
            return ("triple",)
        return ("boolean",)

    def _values(self, o: Output, cols: tuple[str, ...]) -> list[str | None]:
        if o.bindings is not None:
            return [o.bindings.get(c) for c in cols]
        if o.triple is not None:
            return [o.triple]
        return ["true" if o.boolean else "false"]

    def _head(self, o: Output) -> list[str]:
        return (["query"] if self.with_query else []) + ["time", "op"]

    def _csv_or_tsv(self, o: Output, sep: str) -> None:
        cols = self._columns(o)
        header = (o.query, cols)
        if header != self._header:
            self._header = header
            row = self._head(o) + list(cols)
            if self._writer:
                self._writer.writerow(row)
            else:
                self.out.write("\t".join("?" + c if c in cols else c for c in row) + "\n")
        lead = ([o.query] if self.with_query else []) + [str(o.time_text), o.op]
        vals = self._values(o, cols)
        if self._writer:
            self._writer.writerow(lead + [csv_value(v) for v in vals])
        else:
            self.out.write("\t".join(lead + [v or "" for v in vals]) + "\n")

    def _csv(self, o: Output) -> None:
        self._csv_or_tsv(o, ",")

    def _tsv(self, o: Output) -> None:
        self._csv_or_tsv(o, "\t")

    def _table(self, o: Output) -> None:
        group = (o.query, o.time)
        if group != self._group:
            self._flush_table()
            self._group = group
        self._rows.append(o)

    def _flush_table(self) -> None:
        if not self._rows:
            return
        first = self._rows[0]
        cols = tuple(c for c in self._columns(first) if c not in (FROM_VAR, TO_VAR))
        # an event query's matches: the interval each one spans (from its first event to the
        # one completing it), so that two matches of the same bindings are told apart
        spans = [{k: d[k] for k in _SPAN if k in d} for d in (o.to_json() for o in self._rows)]
        timed = tuple(k for k in _SPAN if any(k in sp for sp in spans))
        short = self.prefixes.term if self.prefixes else str
        rows = [[str(sp.get(k, "")) for k in timed]
                + [("-" if o.op == "delete" else "") + short(display(v))
                   for v in self._values(o, cols)]
                for o, sp in zip(self._rows, spans, strict=True)]
        cols = timed + cols
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
        title = f"{first.query} @ {first.time_text}" if self.with_query else f"@ {first.time_text}"
        self.out.write(f"-- {title} ({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
        self.out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() + "\n")
        for r in rows:
            self.out.write("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() + "\n")
        self._rows = []

    def _trig(self, o: Output) -> None:
        if o.triple is None:
            raise ValueError("--format trig needs a CONSTRUCT or DESCRIBE query")
        group = (o.query, o.time, o.op)
        if group != self._group:
            if self._group is not None:
                self.out.write("}\n")
            self._group = group
            g = f"<urn:rsep:result:{o.query}:{o.time}{':delete' if o.op == 'delete' else ''}>"
            t = o.time_text
            lit = (f'"{t}"^^<http://www.w3.org/2001/XMLSchema#dateTime>' if isinstance(t, str)
                   else f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>')
            self.out.write(f"{g} <http://www.w3.org/ns/prov#generatedAtTime> {lit} .\n{g} {{\n")
        self.out.write(f"  {o.triple} .\n")


def _binary(out: IO[str]) -> IO[bytes]:
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        raise ValueError("--format jelly writes bytes: give a file or standard output")
    out.flush()
    return buffer
