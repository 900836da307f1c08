"""Rows of CSV / JSON-lines files as RDF events, mapped by an RML mapping: one event per row.

The mapping is standard RML in Turtle (``rr:`` R2RML terms, ``rml:logicalSource``, FNML
function values). rsep runs the part of RML that maps the rows of one logical source:
subject maps (``rr:template`` / ``rr:constant`` / ``rml:reference``, ``rr:class``),
predicate-object maps, object maps with ``rr:datatype`` / ``rr:language`` / ``rr:termType``,
``fnml:functionValue`` with the functions of ``FUNCTIONS``. Anything else in a mapping
(joins, several sources, JSONPath iterators) is refused when the mapping is loaded, with
the mapping file and the term named. Why not morph-kgc: every release that runs on numpy 2
requires pyoxigraph < 0.4, and rsep pins 0.5 (docs/semantics.md, "Mapped streams").

Two terms of rsep's namespace on the logical source say what RML has no word for:
``rsepml:eventTime "COLUMN"`` (the event time of each row, an integer or an xsd:dateTime)
and ``rsepml:timeZone "Europe/Copenhagen"`` (the zone of zone-less times; UTC if absent).

Each row becomes one event whose graph holds every triple the mapping makes from the row;
its graph name is the source file's URI with ``#row=N`` (RFC 7111; N the row's line). A row
that cannot be mapped (a missing or empty referenced column, a value that is not of the
literal's datatype, a bad time) is rejected with its file, line and the reason.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyoxigraph as ox

from rsep.stream.event import Event, Rejected
from rsep.stream.time import XSD, TimeKind

RR = "http://www.w3.org/ns/r2rml#"
RML = "http://semweb.mmlab.be/ns/rml#"
QL = "http://semweb.mmlab.be/ns/ql#"
FNML = "http://semweb.mmlab.be/ns/fnml#"
FNO = "https://w3id.org/function/ontology#"
GREL = "http://users.ugent.be/~bjdmeest/function/grel.ttl#"
RSEPML = "http://rsep.invalid/rml#"  # the event-time terms rsep adds to a logical source
RSEPFN = "http://rsep.invalid/fn#"  # arithmetic that GREL lacks (FnO functions)
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


class MappingError(ValueError):
    """A mapping that cannot be run: the message names the mapping file and the term."""


class RowError(ValueError):
    """A row the mapping cannot turn into an event (the reason)."""


def _num(v: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise RowError(f"{v!r} is not a number") from None


def _divide_or(a: str, b: str, default: str) -> float:
    d = _num(b)
    return _num(default) if d == 0 else _num(a) / d


# FnO function IRI -> (parameter IRIs in call order, implementation). GREL's IRIs where
# GREL has the function; rsepfn: for subtraction and division, which GREL lacks.
FUNCTIONS: dict[str, tuple[tuple[str, ...], Callable[..., float | str]]] = {
    GREL + "math_max": ((GREL + "p_dec_n", GREL + "param_n2"),
                        lambda a, b: max(_num(a), _num(b))),
    GREL + "math_min": ((GREL + "p_dec_n", GREL + "param_n2"),
                        lambda a, b: min(_num(a), _num(b))),
    RSEPFN + "subtract": ((RSEPFN + "a", RSEPFN + "b"), lambda a, b: _num(a) - _num(b)),
    # a / b, or ``default`` when b is 0 (CityBench's -1 for a zero distance or speed)
    RSEPFN + "divideOr": ((RSEPFN + "a", RSEPFN + "b", RSEPFN + "default"), _divide_or),
}

_NUMERIC = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_INTEGER = re.compile(r"^[+-]?\d+$")
_INTEGER_TYPES = {XSD + n for n in ("integer", "int", "long", "short", "nonNegativeInteger",
                                    "positiveInteger", "unsignedInt", "unsignedLong")}


def _check_lexical(value: str, datatype: str) -> None:
    """Reject a value that is not in the lexical space of the literal's datatype."""
    if datatype in (XSD + "double", XSD + "float"):
        ok = bool(_NUMERIC.match(value)) or value in ("INF", "-INF", "NaN")
    elif datatype == XSD + "decimal":
        ok = bool(_NUMERIC.match(value)) and "e" not in value.lower()
    elif datatype in _INTEGER_TYPES:
        ok = bool(_INTEGER.match(value))
    elif datatype == XSD + "boolean":
        ok = value in ("true", "false", "1", "0")
    elif datatype == XSD + "dateTime":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
            ok = "T" in value
        except ValueError:
            ok = False
    else:
        return
    if not ok:
        raise RowError(f"{value!r} is not an {datatype.replace(XSD, 'xsd:')}")


@dataclass(frozen=True, slots=True)
class TermMap:
    """An RML term map: how one RDF term is made from a row."""

    kind: str  # "constant" | "reference" | "template" | "function"
    value: str  # the constant, column, or template text ("" for functions)
    term_type: str  # "iri" | "literal" | "blank"
    datatype: str | None = None
    language: str | None = None
    parts: tuple[tuple[bool, str], ...] = ()  # template: (is_column, text) pieces
    function: str = ""
    args: tuple[TermMap, ...] = ()

    def columns(self) -> set[str]:
        if self.kind == "reference":
            return {self.value}
        if self.kind == "function":
            return set().union(*(a.columns() for a in self.args))
        return {t for is_col, t in self.parts if is_col}

    def text(self, row: dict[str, str]) -> str:
        """The lexical value for ``row`` (before it becomes an IRI or literal)."""
        if self.kind == "constant":
            return self.value
        if self.kind == "reference":
            return _cell(row, self.value)
        if self.kind == "template":
            iri = self.term_type == "iri"
            # R2RML 7.3: column values in an IRI template are IRI-safe (percent-encoded)
            return "".join((quote(_cell(row, t), safe="-._~") if iri else _cell(row, t))
                           if is_col else t for is_col, t in self.parts)
        params, fn = FUNCTIONS[self.function]
        result = fn(*(a.text(row) for a in self.args))
        if isinstance(result, float) and self.datatype in _INTEGER_TYPES | {XSD + "decimal"}:
            return str(int(result)) if result.is_integer() else repr(result)
        return repr(result) if isinstance(result, float) else str(result)

    def term(self, row: dict[str, str]) -> ox.NamedNode | ox.BlankNode | ox.Literal:
        v = self.text(row)
        if self.term_type == "iri":
            return ox.NamedNode(v)
        if self.term_type == "blank":
            return ox.BlankNode(quote(v, safe=""))
        if self.language:
            return ox.Literal(v, language=self.language)
        if self.datatype:
            _check_lexical(v, self.datatype)
            return ox.Literal(v, datatype=ox.NamedNode(self.datatype))
        return ox.Literal(v)


def _cell(row: dict[str, str], column: str) -> str:
    v = row.get(column)
    if v is None:
        raise RowError(f"column {column!r} is missing")
    if v == "":
        raise RowError(f"column {column!r} is empty")
    return v


@dataclass(frozen=True, slots=True)
class TriplesMap:
    name: str
    subject: TermMap
    classes: tuple[ox.NamedNode, ...]
    predicate_objects: tuple[tuple[TermMap, TermMap], ...]

    def triples(self, row: dict[str, str]) -> list[ox.Triple]:
        s = self.subject.term(row)
        if isinstance(s, ox.Literal):
            raise RowError(f"{self.name}: the subject is a literal")
        out = [ox.Triple(s, RDF_TYPE, c) for c in self.classes]
        for pm, om in self.predicate_objects:
            p = pm.term(row)
            if not isinstance(p, ox.NamedNode):
                raise RowError(f"{self.name}: the predicate {p} is not an IRI")
            out.append(ox.Triple(s, p, om.term(row)))
        return out


@dataclass(frozen=True)
class Mapping:
    """A loaded RML mapping: its one logical source and its triples maps."""

    path: Path
    source: Path
    fmt: str  # "csv" | "jsonl"
    time_column: str
    zone: ZoneInfo | None
    maps: tuple[TriplesMap, ...]

    def columns(self) -> set[str]:
        cols = {self.time_column}
        for m in self.maps:
            cols |= m.subject.columns()
            for pm, om in m.predicate_objects:
                cols |= pm.columns() | om.columns()
        return cols

    def row_triples(self, row: dict[str, str]) -> list[ox.Triple]:
        return [t for m in self.maps for t in m.triples(row)]

    def row_time(self, row: dict[str, str]) -> tuple[int, TimeKind]:
        v = _cell(row, self.time_column).strip()
        if _INTEGER.match(v):
            return int(v), TimeKind.ABSTRACT
        try:
            dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise RowError(f"time column {self.time_column!r}: {v!r} is neither an integer "
                           "nor a date-time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=self.zone or UTC)
        return int(round(dt.timestamp() * 1000)), TimeKind.DATETIME


class _Reader:
    """Reads the mapping's Turtle: one-valued properties, with errors that name the node."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = ox.Store()
        try:
            self.store.load(path=str(path), format=ox.RdfFormat.TURTLE,
                            base_iri=path.resolve().as_uri())
        except (SyntaxError, OSError, ValueError) as e:
            raise MappingError(f"{path}: {e}") from None

    def error(self, node: object, what: str) -> MappingError:
        return MappingError(f"{self.path}: {node}: {what}")

    # nodes are Any: pyoxigraph types a quad's subject as NamedNode | BlankNode | Triple
    def values(self, s: Any, p: str) -> list[Any]:
        return [q.object for q in self.store.quads_for_pattern(s, ox.NamedNode(p), None)]

    def one(self, s: Any, p: str, required: bool = False) -> Any:
        vs = self.values(s, p)
        if len(vs) > 1:
            raise self.error(s, f"more than one <{p}>")
        if not vs and required:
            raise self.error(s, f"no <{p}>")
        return vs[0] if vs else None


_TERM_TYPES = {RR + "IRI": "iri", RR + "Literal": "literal", RR + "BlankNode": "blank"}
_UNSUPPORTED = (RR + "parentTriplesMap", RR + "joinCondition", RR + "sqlQuery",
                RR + "logicalTable", RML + "iterator", RR + "graphMap", RR + "graph")


def _template_parts(text: str) -> tuple[tuple[bool, str], ...]:
    parts: list[tuple[bool, str]] = []
    for m in re.finditer(r"\\([{}\\])|\{([^{}]*)\}|([^{}\\]+)|(.)", text):
        esc, col, lit, bad = m.groups()
        if bad is not None:
            raise ValueError(f"unbalanced {bad!r} in template {text!r}")
        if col is not None:
            parts.append((True, col))
        else:
            parts.append((False, esc if esc is not None else lit))
    return tuple(parts)


def _term_map(r: _Reader, node: Any, position: str) -> TermMap:
    for p in _UNSUPPORTED:
        if r.values(node, p):
            raise r.error(node, f"<{p}> is RML that rsep does not run")
    const = r.one(node, RR + "constant")
    ref = r.one(node, RML + "reference")
    tmpl = r.one(node, RR + "template")
    fn = r.one(node, FNML + "functionValue")
    given = [x for x in (const, ref, tmpl, fn) if x is not None]
    if len(given) != 1:
        raise r.error(node, f"a {position} map needs exactly one of rr:constant, "
                            "rml:reference, rr:template, fnml:functionValue")
    tt = r.one(node, RR + "termType")
    dt = r.one(node, RR + "datatype")
    lang = r.one(node, RR + "language")
    if tt is not None:
        if tt.value not in _TERM_TYPES:
            raise r.error(node, f"unknown rr:termType {tt}")
        term_type = _TERM_TYPES[tt.value]
    elif position == "object" and (ref is not None or fn is not None or dt or lang):
        term_type = "literal"  # R2RML 7.4: references default to literals in object maps
    elif const is not None and isinstance(const, ox.Literal):
        term_type = "literal"
    else:
        term_type = "iri"
    if term_type == "literal" and position != "object":
        raise r.error(node, f"a {position} cannot be a literal")
    kw: dict[str, Any] = {"term_type": term_type, "datatype": dt.value if dt is not None else None,
          "language": lang.value if lang is not None else None}
    if const is not None:
        if isinstance(const, ox.Literal):
            kw["datatype"] = kw["datatype"] or (
                const.datatype.value if const.datatype.value != XSD + "string" else None)
            kw["language"] = kw["language"] or const.language
        return TermMap("constant", const.value, **kw)
    if ref is not None:
        return TermMap("reference", ref.value, **kw)
    if tmpl is not None:
        try:
            return TermMap("template", tmpl.value, parts=_template_parts(tmpl.value), **kw)
        except ValueError as e:
            raise r.error(node, str(e)) from None
    return _function(r, fn, kw)


def _function(r: _Reader, fn_node: Any, kw: dict[str, Any]) -> TermMap:
    """An FNML function value: a triples map whose predicate-object maps name the FnO
    function (fno:executes) and give its parameters."""
    fn_iri: str | None = None
    given: dict[str, TermMap] = {}
    for pom in r.values(fn_node, RR + "predicateObjectMap"):
        pred = r.one(pom, RR + "predicate")
        om = r.one(pom, RR + "objectMap", required=True)
        if pred is None:
            raise r.error(pom, "a function's predicate-object map needs rr:predicate")
        if pred.value == FNO + "executes":
            c = r.one(om, RR + "constant")
            if c is None:
                raise r.error(om, "fno:executes needs an rr:constant function IRI")
            fn_iri = c.value
        else:
            given[pred.value] = _term_map(r, om, "object")
    if fn_iri is None:
        raise r.error(fn_node, "function value without fno:executes")
    if fn_iri not in FUNCTIONS:
        raise r.error(fn_node, f"function <{fn_iri}> is not one rsep runs; it runs "
                               + ", ".join(f"<{f}>" for f in FUNCTIONS))
    params, _ = FUNCTIONS[fn_iri]
    missing = [p for p in params if p not in given]
    extra = [p for p in given if p not in params]
    if missing or extra:
        raise r.error(fn_node, f"<{fn_iri}> takes parameters "
                               + ", ".join(f"<{p}>" for p in params))
    return TermMap("function", "", function=fn_iri, args=tuple(given[p] for p in params), **kw)


def _map_of(r: _Reader, node: Any, short: str, full: str,
            position: str) -> TermMap:
    """A term map given in full (rr:subjectMap [...]) or by its constant shortcut (rr:subject)."""
    c = r.one(node, RR + short)
    m = r.one(node, RR + full)
    if (c is None) == (m is None):
        raise r.error(node, f"needs exactly one of rr:{short}, rr:{full}")
    if c is not None:
        return TermMap("constant", c.value, "literal" if isinstance(c, ox.Literal) else "iri")
    return _term_map(r, m, position)


def load_mapping(path: str | Path) -> Mapping:
    """Load an RML mapping (Turtle); raise MappingError naming the file and term if rsep
    cannot run it."""
    p = Path(path)
    r = _Reader(p)
    nodes = {q.subject for q in r.store.quads_for_pattern(
        None, ox.NamedNode(RML + "logicalSource"), None)}
    if not nodes:
        raise MappingError(f"{p}: no triples map (nothing has an rml:logicalSource)")
    sources: set[tuple[str, str, str, str | None]] = set()
    maps: list[TriplesMap] = []
    for tm in sorted(nodes, key=str):
        ls = r.one(tm, RML + "logicalSource", required=True)
        src = r.one(ls, RML + "source", required=True)
        form = r.one(ls, RML + "referenceFormulation")
        fmt = "jsonl" if form is not None and form.value == QL + "JSONPath" else "csv"
        if form is not None and form.value not in (QL + "CSV", QL + "JSONPath"):
            raise r.error(ls, f"reference formulation {form} (rsep reads ql:CSV, ql:JSONPath)")
        it = r.one(ls, RML + "iterator")
        if fmt == "jsonl" and it is not None and it.value != "$":
            raise r.error(ls, 'JSON lines are read one object a line: rml:iterator must be "$"')
        t = r.one(ls, RSEPML + "eventTime", required=True)
        z = r.one(ls, RSEPML + "timeZone")
        sources.add((src.value, fmt, t.value, z.value if z is not None else None))
        if r.values(r.one(tm, RR + "subjectMap") or tm, RR + "graphMap"):
            raise r.error(tm, "rr:graphMap: each row's event graph is named by rsep "
                              "(the file's URI with #row=N)")
        subject = _map_of(r, tm, "subject", "subjectMap", "subject")
        sm = r.one(tm, RR + "subjectMap")
        classes = tuple(r.values(sm, RR + "class")) if sm is not None else ()
        poms = []
        for pom in r.values(tm, RR + "predicateObjectMap"):
            poms.append((_map_of(r, pom, "predicate", "predicateMap", "predicate"),
                         _map_of(r, pom, "object", "objectMap", "object")))
        maps.append(TriplesMap(str(tm), subject, classes, tuple(poms)))
    if len(sources) != 1:
        raise MappingError(f"{p}: the triples maps read {len(sources)} different logical "
                           "sources; a mapped stream has one (one event per row)")
    src_text, fmt, time_col, zone = sources.pop()
    try:
        tz = ZoneInfo(zone) if zone else None
    except (ZoneInfoNotFoundError, ValueError):
        raise MappingError(f"{p}: unknown time zone {zone!r} (rsepml:timeZone)") from None
    src = Path(src_text)
    if not src.is_absolute():  # relative to the mapping, so a mapping works from any cwd
        src = p.parent / src
    return Mapping(p, src, fmt, time_col, tz, tuple(maps))


class MappedStreamFile:
    """Events of one mapped CSV / JSON-lines file, in file order, plus rejected rows."""

    def __init__(self, mapping: str | Path | Mapping, stream: str,
                 source: str | Path | None = None) -> None:
        self.mapping = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
        self.path = Path(source) if source is not None else self.mapping.source
        self.stream = stream

    def __iter__(self) -> Iterator[Event | Rejected]:
        origin = str(self.path)
        base = self.path.resolve().as_uri() + "#row="
        m = self.mapping
        for line, row, text in self._rows():
            try:
                if row is None:
                    raise RowError(text)
                t, kind = m.row_time(row)
                triples = m.row_triples(row)
            except RowError as e:
                yield Rejected(self.stream, origin, line, 0, str(e),
                               json.dumps(row) if row is not None else "")
                continue
            yield Event(stream=self.stream, graph=f"{base}{line}", start=t, end=t,
                        triples=tuple(triples), kind=kind, origin=f"{origin}:{line}")

    def _rows(self) -> Iterator[tuple[int, dict[str, str] | None, str]]:
        """(line, row, "") per record, or (line, None, reason) for one that cannot be read."""
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            if self.mapping.fmt == "jsonl":
                for i, raw in enumerate(f, 1):
                    if not raw.strip():
                        continue
                    try:
                        d = json.loads(raw)
                    except ValueError as e:
                        yield i, None, f"not JSON: {e}"
                        continue
                    if not isinstance(d, dict):
                        yield i, None, "a line must be a JSON object"
                        continue
                    yield i, {k: "" if v is None else v if isinstance(v, str) else
                              json.dumps(v) for k, v in d.items()}, ""
                return
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                return
            absent = sorted(self.mapping.columns() - set(header))
            if absent:
                raise MappingError(f"{self.path}:1: the header has no column(s) "
                                   f"{', '.join(absent)} that {self.mapping.path} references")
            width = len(header)
            line = reader.line_num
            for rec in reader:
                start, line = line + 1, reader.line_num
                if not rec:
                    continue
                if len(rec) != width:
                    yield start, None, f"{len(rec)} fields where the header has {width}"
                    continue
                yield start, dict(zip(header, rec, strict=True)), ""
