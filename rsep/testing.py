"""The W3C SPARQL 1.1 evaluation tests through every dialect (project issue 16).

A plain SPARQL 1.1 query, its data one event at time 0, must give inside each
dialect what the W3C expects of SPARQL. This module reads the test manifests,
keeps the tests pyoxigraph itself passes (*counted*), rewrites each query into
each dialect at the level of its text, runs it through that dialect's real
``parse_query`` + ``Engine`` path and compares the results as bags:

- numeric and boolean literals by value (within their datatype; pyoxigraph canonicalises
  them), language tags without case;
- blank nodes as wildcards, up to one consistent bijection over the whole result;
- in order only where the query has a top-level ORDER BY and the expected result
  is in an ordered format (SPARQL XML, JSON, TSV, CSV).

Some dialects refuse a construct by design (EP-SPARQL: what needs the end of an
unbounded stream; SPASEQ: what its grammar cannot say; an RSEP-QL event pattern
holds a basic graph pattern only): :data:`REFUSALS` lists each, by reason, with
the message its QueryError must carry at parse time. ``python -m rsep.testing w3c``
(or ``python tests/test_w3c_eval.py``) prints the counts per dialect.
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TextIO
from urllib.parse import unquote, urlparse

import pyoxigraph as ox
from lark import Tree

if TYPE_CHECKING:
    from rsep.algebra.output import Output
    from rsep.algebra.query import Query
    from rsep.stream.event import Event

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
XSD = "http://www.w3.org/2001/XMLSchema#"

DIRS = ("aggregates", "bind", "bindings", "cast", "construct", "exists", "functions", "grouping",
        "negation", "project-expression", "property-path", "subquery", "csv-tsv-res", "json-res")
DIALECTS = ("rspql", "csparql", "cqels", "epsparql", "spaseq", "match")

# The stream, its one event and the window the rewritten queries read.
STREAM = "http://rsep.invalid/w3c/stream"
EVENT = "http://rsep.invalid/w3c/event"
WINDOW = "http://rsep.invalid/w3c/window"


def w3c_dir() -> Path:
    """The suite: ``$RSEP_W3C_DATA``, else ``../shared/data/w3c-sparql11`` beside the checkout."""
    given = os.environ.get("RSEP_W3C_DATA")
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "w3c-sparql11"


# ---------------------------------------------------------------- manifests


@dataclass(frozen=True)
class W3CTest:
    id: str  # directory/local name, e.g. "aggregates/agg01"
    name: str
    query: Path
    data: Path
    result: Path

    def text(self) -> str:
        return self.query.read_text(encoding="utf-8")


_ENTRIES = f"""
PREFIX mf: <{MF}> PREFIX qt: <{QT}>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?test ?name ?query ?data ?result WHERE {{
  ?manifest mf:entries/rdf:rest*/rdf:first ?test .
  ?test rdf:type ?type ; mf:action ?action ; mf:result ?result .
  VALUES ?type {{ mf:QueryEvaluationTest mf:CSVResultFormatTest }}
  ?action qt:query ?query ; qt:data ?data .
  OPTIONAL {{ ?test mf:name ?name }}
  FILTER NOT EXISTS {{ ?action qt:graphData ?g }}
  FILTER NOT EXISTS {{ ?action qt:data ?other FILTER (?other != ?data) }}
}}
"""


def _path(iri: str) -> Path:
    return Path(unquote(urlparse(iri).path))


def read_manifests(root: Path | None = None, dirs: Iterable[str] = DIRS) -> list[W3CTest]:
    """The query evaluation tests (``mf:QueryEvaluationTest``, and ``mf:CSVResultFormatTest``,
    an evaluation test with a CSV result) whose data is one default graph: one ``qt:data``,
    no ``qt:graphData``. In manifest order."""
    root = root or w3c_dir()
    out = []
    for d in dirs:
        manifest = root / d / "manifest.ttl"
        store = ox.Store()
        store.load(path=str(manifest), format=ox.RdfFormat.TURTLE, base_iri=manifest.as_uri())
        order = {str(t): i for i, t in enumerate(
            r["t"] for r in _select(store, f"PREFIX mf: <{MF}> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
                                           "SELECT ?t WHERE { ?m mf:entries/rdf:rest*/rdf:first ?t }"))}
        rows = sorted(_select(store, _ENTRIES), key=lambda r: order.get(str(r["test"]), 0))
        for r in rows:
            local = r["test"].value.rsplit("#", 1)[-1]
            out.append(W3CTest(f"{d}/{local}", r["name"].value if r["name"] else local,
                               _path(r["query"].value), _path(r["data"].value), _path(r["result"].value)))
    return out


# ---------------------------------------------------------------- results

_NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "long", "int", "short", "byte",
                              "nonNegativeInteger", "nonPositiveInteger", "negativeInteger",
                              "positiveInteger", "unsignedLong", "unsignedInt", "unsignedShort",
                              "unsignedByte")}
_BOOLEAN = XSD + "boolean"
_BOOLEANS = {"true": "true", "1": "true", "false": "false", "0": "false"}
Key = tuple


def _number(lexical: str) -> Decimal | str | None:
    s = lexical.strip()
    if s in ("INF", "+INF", "-INF", "NaN"):
        return s.lstrip("+")
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def term_key(t: object) -> Key:
    """A term as a comparable key: numbers and booleans by value, language tags in lower case."""
    if isinstance(t, ox.NamedNode):
        return ("I", t.value)
    if isinstance(t, ox.BlankNode):
        return ("B", t.value)
    if isinstance(t, ox.Literal):
        dt = t.datatype.value
        if dt in _NUMERIC and (n := _number(t.value)) is not None:
            return ("N", dt, n)
        if dt == _BOOLEAN and t.value in _BOOLEANS:
            return ("L", _BOOLEANS[t.value], dt, None)
        return ("L", t.value, dt, t.language.lower() if t.language else None)
    return ("T", str(t))  # a triple term


@cache
def nt_key(term: str) -> Key:
    """The key of a term written in N-Triples (as rsep's outputs carry them)."""
    quad = next(iter(ox.parse(f"<urn:s> <urn:p> {term} .", format=ox.RdfFormat.N_TRIPLES)))
    return term_key(quad.object)


def csv_key(text: str) -> Key:
    """A CSV result field: text only, numbers by value, ``_:x`` a blank node."""
    if text.startswith("_:"):
        return ("B", text[2:])
    n = _number(text) if text[:1].isdigit() or text[:1] in "+-." else None
    return ("N", n) if n is not None else ("C", text)


def _csv_of(key: Key) -> Key:
    """What a term becomes in CSV (SPARQL 1.1 CSV results: no types), as a key."""
    if key[0] == "I":
        return ("C", key[1])
    if key[0] == "B":
        return key
    if key[0] == "N":
        return ("N", key[2])
    return csv_key(key[1]) if key[0] == "L" else ("C", key[1])


@dataclass
class Result:
    """A query's result: SELECT rows (variable -> key, unbound omitted), an ASK boolean,
    or a graph's triples as rows {s, p, o} (a set)."""

    form: str  # "bindings" | "boolean" | "graph" | "csv"
    rows: list[dict[str, Key]] = field(default_factory=list)
    boolean: bool | None = None


def _select(store: ox.Store, query: str) -> ox.QuerySolutions:
    res = store.query(query)
    assert isinstance(res, ox.QuerySolutions)
    return res


def _solutions(res: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples) -> Result:
    if isinstance(res, ox.QueryBoolean):
        return Result("boolean", boolean=bool(res))
    if isinstance(res, ox.QuerySolutions):
        names = [v.value for v in res.variables]
        rows = []
        for sol in res:
            rows.append({n: term_key(sol[n]) for n in names if sol[n] is not None})
        return Result("bindings", rows)
    return _graph(res)


def _graph(triples: Iterable[ox.Triple]) -> Result:
    seen = {(term_key(t.subject), term_key(t.predicate), term_key(t.object)) for t in triples}
    return Result("graph", [{"s": s, "p": p, "o": o} for s, p, o in sorted(seen)])


def _csv_result(path: Path) -> Result:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    return Result("csv", [{v: csv_key(x) for v, x in zip(head, r, strict=True) if x != ""} for r in body])


def expected_result(test: W3CTest) -> Result:
    ext = test.result.suffix.lower()
    if ext == ".csv":
        return _csv_result(test.result)
    fmt = {".srx": ox.QueryResultsFormat.XML, ".srj": ox.QueryResultsFormat.JSON,
           ".tsv": ox.QueryResultsFormat.TSV}.get(ext)
    if fmt is not None:
        return _solutions(ox.parse_query_results(path=str(test.result), format=fmt))
    rdf = ox.RdfFormat.from_extension(ext.lstrip("."))
    return _graph(q.triple for q in ox.parse(path=str(test.result), format=rdf,
                                              base_iri=test.result.as_uri()))


def data_triples(test: W3CTest) -> list[ox.Triple]:
    fmt = ox.RdfFormat.from_extension(test.data.suffix.lstrip("."))
    return [q.triple for q in ox.parse(path=str(test.data), format=fmt, base_iri=test.data.as_uri())]


def pyoxigraph_result(test: W3CTest) -> Result:
    """The test's query run by pyoxigraph itself over its data (in the default graph)."""
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
                 for t in data_triples(test))
    return _solutions(store.query(test.text(), base_iri=test.query.as_uri()))


def ordered(test: W3CTest) -> bool:
    """Compared in order: a top-level ORDER BY and an expected result in an ordered format."""
    return test.result.suffix.lower() in (".srx", ".srj", ".tsv", ".csv") and shape(test.text()).order_by


def difference(expected: Result, actual: Result, in_order: bool = False) -> str | None:
    """None when the results agree (the rules above), else what differs, for people."""
    if expected.form == "boolean" or actual.form == "boolean":
        if (expected.form, expected.boolean) == (actual.form, actual.boolean):
            return None
        return f"expected {expected.form} {expected.boolean}, got {actual.form} {actual.boolean}"
    exp, act = expected.rows, actual.rows
    if expected.form == "csv" and actual.form != "csv":
        act = [{v: _csv_of(k) for v, k in r.items()} for r in act]
    if expected.form == "graph" and actual.form == "bindings" or \
            expected.form in ("bindings", "csv") and actual.form == "graph":
        return f"expected a {expected.form} result, got a {actual.form} one"
    if _same_rows(exp, act, in_order):
        return None
    show = 6
    ce, ca = Counter(map(_shape_of, exp)), Counter(map(_shape_of, act))
    missing = [dict(r) for r in (ce - ca).elements()][:show]
    extra = [dict(r) for r in (ca - ce).elements()][:show]
    return (f"expected {len(exp)} rows, got {len(act)}"
            + (" (compared in order)" if in_order else "")
            + (f"; missing e.g. {_fmt(missing)}" if missing else "")
            + (f"; unexpected e.g. {_fmt(extra)}" if extra else ""))


def _fmt(rows: list[dict[str, Key]]) -> str:
    def term(k: Key) -> str:
        return {"I": lambda: f"<{k[1]}>", "B": lambda: "_:" + (k[1] if len(k) > 1 else ""),
                "N": lambda: str(k[-1]), "L": lambda: repr(k[1]) + (f"@{k[3]}" if k[3] else ""),
                "C": lambda: repr(k[1])}.get(k[0], lambda: str(k))()

    return "; ".join("{" + ", ".join(f"{v}={term(k)}" for v, k in sorted(r.items())) + "}" for r in rows)


def _shape_of(row: dict[str, Key]) -> tuple:
    """A row with its blank nodes blurred: rows that may match under some bijection share it."""
    return tuple(sorted((v, ("B",) if k[0] == "B" else k) for v, k in row.items()))


def _same_rows(exp: list[dict[str, Key]], act: list[dict[str, Key]], in_order: bool) -> bool:
    if len(exp) != len(act):
        return False
    se, sa = [_shape_of(r) for r in exp], [_shape_of(r) for r in act]
    if (se != sa) if in_order else (Counter(se) != Counter(sa)):
        return False
    if not any(k[0] == "B" for r in exp for k in r.values()):
        return True
    # Blank nodes: one bijection from the expected labels to the actual ones, found by
    # backtracking over the rows (candidates share the blurred shape).
    order = sorted(range(len(exp)), key=lambda i: sum(k[0] == "B" for k in exp[i].values()))
    used = [False] * len(act)

    def extend(m: dict[str, str], inv: dict[str, str], e: dict, a: dict) -> tuple[dict, dict] | None:
        m2, inv2 = m, inv
        for v, k in e.items():
            if k[0] != "B":
                continue
            b = a[v][1]
            got = m2.get(k[1])
            if got is None:
                if b in inv2:
                    return None
                if m2 is m:
                    m2, inv2 = dict(m), dict(inv)
                m2[k[1]] = b
                inv2[b] = k[1]
            elif got != b:
                return None
        return m2, inv2

    def go(n: int, m: dict[str, str], inv: dict[str, str]) -> bool:
        if n == len(order):
            return True
        i = order[n]
        cands = [i] if in_order else [j for j in range(len(act)) if not used[j] and sa[j] == se[i]]
        for j in cands:
            got = extend(m, inv, exp[i], act[j])
            if got is None:
                continue
            used[j] = True
            if go(n + 1, *got):
                return True
            used[j] = False
        return False

    return go(0, {}, {})


def outputs_result(form: str, outputs: Iterable[Output]) -> Result:
    """rsep's outputs (:class:`rsep.runtime.engine.Output`) as a result: every inserted
    row, triple or boolean (deletions, DSTREAM's, never come from one evaluation)."""
    rows: list[dict[str, Key]] = []
    triples: set[tuple] = set()
    boolean = None
    for o in outputs:
        if o.op == "delete":
            continue
        if o.bindings is not None:
            rows.append({v: nt_key(t) for v, t in o.bindings.items()})
        elif o.triple is not None:
            tr = next(iter(ox.parse(o.triple + " .", format=ox.RdfFormat.N_TRIPLES)))
            triples.add((term_key(tr.subject), term_key(tr.predicate), term_key(tr.object)))
        elif o.boolean is not None:
            boolean = bool(o.boolean)
    if form == "ASK":
        return Result("boolean", boolean=bool(boolean))
    if form in ("CONSTRUCT", "DESCRIBE"):
        return Result("graph", [{"s": s, "p": p, "o": o} for s, p, o in sorted(triples)])
    return Result("bindings", rows)


# ---------------------------------------------------------------- the query's shape


@dataclass
class Shape:
    """Where the parts of a SPARQL 1.1 query are in its text, and what it uses."""

    text: str
    form: str  # SELECT | CONSTRUCT | ASK | DESCRIBE
    where: tuple[int, int] | None  # the outer WHERE group, braces included
    where_clause: tuple[int, int] | None  # with its WHERE keyword
    template: tuple[int, int] | None  # CONSTRUCT WHERE { T }: the whole short form, and T is where
    modifiers: tuple[int, int] | None
    values: tuple[int, int] | None  # the trailing VALUES clause
    features: set[str] = field(default_factory=set)  # anywhere in the query
    top: set[str] = field(default_factory=set)  # in the outer SELECT clause and solution modifiers

    @property
    def order_by(self) -> bool:
        return "order_clause" in self.top

    def pattern(self) -> str:
        """P of the outer WHERE { P }."""
        if self.where is None:
            return ""
        return self.text[self.where[0] + 1:self.where[1] - 1]


def _span(node: Tree) -> tuple[int, int] | None:
    if node.meta.empty:
        return None
    return node.meta.start_pos, node.meta.end_pos


_FEATURES = ("aggregate", "group_clause", "having_clause", "order_clause", "limit_clause",
             "offset_clause", "sub_select", "optional_graph_pattern", "minus_graph_pattern",
             "group_or_union_graph_pattern", "graph_graph_pattern", "bind", "inline_data",
             "exists_func", "not_exists_func", "service_graph_pattern", "dataset_clause")


@cache
def shape(text: str) -> Shape:
    """The query's parts and features (from rsep's own SPARQL 1.1 grammar)."""
    from rsep.lang.parser import parse_tree

    tree = parse_tree(text)
    body = tree.children[1]
    q = next(c for c in body.children if isinstance(c, Tree) and c.data.endswith("_query"))
    values = body.children[-1]
    form = q.data.split("_")[0].upper()
    kids = [c for c in q.children if isinstance(c, Tree)]
    template = None
    if form == "CONSTRUCT":
        inner = kids[0]
        kids = [c for c in inner.children if isinstance(c, Tree)]
        if inner.data == "construct_triples_template":
            template = _span(inner)
    wc = next((c for c in kids if c.data == "where_clause"), None)
    mods = next((c for c in kids if c.data == "solution_modifier"), None)
    where = _span(wc.children[-1]) if wc is not None else None
    if template is not None:  # the short form's group: "WHERE { T }" from the WHERE keyword on
        opening = text.index("{", template[0])
        closing = text.rindex("}", 0, span[0] if mods is not None and (span := _span(mods)) else template[1])
        where = (opening, closing + 1)
    features = set()
    for n in tree.iter_subtrees():
        if n.data in _FEATURES:
            features.add(n.data)
        if n.data == "path_mod" or (n.data in ("path_sequence", "path_alternative") and len(n.children) > 1):
            features.add("property_path")  # p*, p+, p?, p/q, p|q (^p and !p are single steps)
    if _reads_triples(tree):
        features.add("triples")
    top = set()
    sel = kids[0] if kids and kids[0].data == "select_clause" else None
    for part in (sel, mods):
        if part is not None:
            top |= {n.data for n in part.iter_subtrees() if n.data in _FEATURES}
    return Shape(text, form, where, _span(wc) if wc is not None else None, template,
                 _span(mods) if mods is not None else None,
                 _span(values) if isinstance(values, Tree) else None, features, top)


def _reads_triples(node: Tree) -> bool:
    """A triple pattern anywhere but inside a FILTER's expression (EXISTS)."""
    if node.data == "triples_block":
        return True
    return any(isinstance(c, Tree) and c.data != "filter" and _reads_triples(c) for c in node.children)


# ---------------------------------------------------------------- dialects


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _long_construct(s: Shape) -> tuple[str, Shape]:
    """CONSTRUCT WHERE { T } written CONSTRUCT { T } WHERE { T }, so that its WHERE can change."""
    if s.template is None:
        return s.text, s
    t = s.pattern()
    assert s.where is not None  # (the short form's group is its WHERE)
    text = _edit(s.text, [(s.template[0], s.where[1], "{" + t + "} WHERE {" + t + "}")])
    return text, shape(text)


def _dataset_at(s: Shape) -> int:
    """Where dataset clauses go: before WHERE (or, in a DESCRIBE without one, before its
    solution modifiers)."""
    if s.where_clause is not None:
        return s.where_clause[0]
    if s.modifiers is not None:
        return s.modifiers[0]
    return s.values[0] if s.values is not None else len(s.text)


def rewrite(text: str, dialect: str, base: str | None = None) -> str:
    """The query inside ``dialect``, reading the stream ``STREAM`` (one event at time 0):

    - rspql: ``FROM NAMED WINDOW <w> ON <s> [RANGE 1 STEP 1]``, ``WHERE { WINDOW <w> { P } }``;
    - csparql: ``FROM STREAM <s> [RANGE 1 STEP 1]``, the pattern unchanged (merged default graph);
    - cqels: ``WHERE { STREAM <s> [RANGE 1] { P } }``;
    - epsparql: the query as written;
    - spaseq: ``FROM STREAM S1 <s> WHERE { SEQ (A) DEFINE GPM A ON S1 { P } }``, the rest as written;
    - match: the RSP-QL window, ``EVENT ON <w> { P } AS E``, ``WHERE { MATCH { E } }``.

    Prologue, projection, templates and solution modifiers stay. ``base``: a BASE put first
    (the W3C queries resolve against their own location).
    """
    s = shape(text)
    if dialect != "epsparql":
        text, s = _long_construct(s)
    edits: list[tuple[int, int, str]] = []
    at = _dataset_at(s)
    p = s.pattern()
    window = f"FROM NAMED WINDOW <{WINDOW}> ON <{STREAM}> [RANGE 1 STEP 1]\n"
    if dialect == "rspql":
        edits.append((at, at, window))
        if s.where is not None:
            edits.append((s.where[0], s.where[1], f"{{ WINDOW <{WINDOW}> {{{p}}} }}"))
    elif dialect == "csparql":
        edits.append((at, at, f"FROM STREAM <{STREAM}> [RANGE 1 STEP 1]\n"))
    elif dialect == "cqels":
        if s.where is not None:
            edits.append((s.where[0], s.where[1], f"{{ STREAM <{STREAM}> [RANGE 1] {{{p}}} }}"))
        else:
            edits.append((at, at, f"WHERE {{ STREAM <{STREAM}> [RANGE 1] {{}} }}\n"))
    elif dialect == "spaseq":
        gpm = f"WHERE {{ SEQ (A) DEFINE GPM A ON S1 {{{p}}} }}"
        if s.where_clause is not None:
            edits.append((s.where_clause[0], s.where_clause[1], f"FROM STREAM S1 <{STREAM}>\n{gpm}"))
        else:
            edits.append((at, at, f"FROM STREAM S1 <{STREAM}>\n{gpm}\n"))
    elif dialect == "match":
        edits.append((at, at, window + f"EVENT ON <{WINDOW}> {{{p}}} AS E\n"))
        if s.where is not None:
            edits.append((s.where[0], s.where[1], "{ MATCH { E } }"))
    elif dialect != "epsparql":
        raise ValueError(f"unknown dialect {dialect!r}")
    text = _edit(text, edits)
    return (f"BASE <{base}>\n" + text) if base else text


# ---------------------------------------------------------------- refusals


@dataclass(frozen=True)
class Refusal:
    """A construct a dialect refuses by design, at parse time, with a message."""

    dialect: str
    reason: str
    applies: Callable[[Shape], bool]
    message: str  # a regular expression the QueryError's message must match

    def matches(self, message: str) -> bool:
        return re.search(self.message, message, re.I | re.S) is not None


def _any(*names: str) -> Callable[[Shape], bool]:
    return lambda s: any(n in s.features for n in names)


def _top(*names: str) -> Callable[[Shape], bool]:
    return lambda s: any(n in s.top for n in names)


_NEEDS_END = "the end of an unbounded stream"
# what an RSEP-QL event pattern may not hold (rsep.lang.rspql.events._check_bep)
_NOT_BGP = frozenset({"optional_graph_pattern", "minus_graph_pattern", "group_or_union_graph_pattern",
                      "graph_graph_pattern", "bind", "inline_data", "sub_select",
                      "service_graph_pattern", "property_path"})


REFUSALS: tuple[Refusal, ...] = (
    # EP-SPARQL pushes each solution once, when it is final (003's timewise monotonicity):
    # grouping, aggregating, ordering and slicing need the whole, which an unbounded
    # stream never ends to give.
    Refusal("epsparql", f"aggregates need {_NEEDS_END}", _any("aggregate"), r"aggregate"),
    Refusal("epsparql", f"GROUP BY needs {_NEEDS_END}", _any("group_clause"), r"GROUP BY"),
    Refusal("epsparql", f"HAVING needs {_NEEDS_END}", _any("having_clause"), r"HAVING"),
    # ... ORDER BY only orders what one instant detects: accepted.
    # A solution is timed by the stream triples it matches (003 Sec. 4.2): a pattern with
    # none detects no event.
    Refusal("epsparql", "a pattern that reads no stream triple detects no event",
            lambda s: "triples" not in _where_features(s),
            r"reads no stream triple"),
    Refusal("epsparql", f"LIMIT needs {_NEEDS_END}", _any("limit_clause"), r"LIMIT"),
    Refusal("epsparql", f"OFFSET needs {_NEEDS_END}", _any("offset_clause"), r"OFFSET"),
    # SPASEQ outputs each match when it is detected (002 Def. 16): aggregating its outputs
    # needs the whole stream (a sub-SELECT inside a GPM aggregates one event: accepted).
    Refusal("spaseq", f"aggregates in the projection need {_NEEDS_END}", _top("aggregate"),
            r"aggregates need the end"),
    # SPASEQ's grammar (002 Sec. 4.2): SELECT ... FROM STREAM ... WHERE { SEQ ... DEFINE GPM ... },
    # nothing after the WHERE group, and SELECT the only form.
    Refusal("spaseq", "SPASEQ has no solution modifiers (GROUP BY, HAVING, ORDER BY, LIMIT, OFFSET)",
            _top("group_clause", "having_clause", "order_clause", "limit_clause", "offset_clause"),
            r"syntax error: unexpected '(GROUP|HAVING|ORDER|LIMIT|OFFSET)"),
    Refusal("spaseq", "SPASEQ has no VALUES clause after WHERE",
            lambda s: s.values is not None, r"syntax error: unexpected 'VALUES'"),
    Refusal("spaseq", "SPASEQ queries are SELECT queries",
            lambda s: s.form != "SELECT", r"syntax error: unexpected '(CONSTRUCT|ASK|DESCRIBE)"),
    # An RSEP-QL basic event pattern is a BGP with FILTERs (000 Sec. 3.3 (1)).
    Refusal("match", "an EVENT pattern is a basic graph pattern (triple patterns and FILTERs)",
            lambda s: bool(_where_features(s) & _NOT_BGP),
            r"an EVENT pattern is a basic graph pattern"),
)


@cache
def _where_features_of(text: str, span: tuple[int, int] | None) -> frozenset[str]:
    """What the outer WHERE group uses (FILTERs' EXISTS patterns included)."""
    if span is None:
        return frozenset()
    return frozenset(shape(f"SELECT * WHERE {text[span[0]:span[1]]}").features)


def _where_features(s: Shape) -> frozenset[str]:
    return _where_features_of(s.text, s.where)


def refusals(s: Shape, dialect: str) -> list[Refusal]:
    return [r for r in REFUSALS if r.dialect == dialect and r.applies(s)]


# ---------------------------------------------------------------- running


def event_of(test: W3CTest) -> Event:
    from rsep.stream.event import Event
    from rsep.stream.time import TimeKind

    return Event(STREAM, EVENT, 0, 0, tuple(data_triples(test)), TimeKind.ABSTRACT, 0, f"{test.data}:1")


@dataclass(frozen=True)
class Silence:
    """A (test, dialect) whose dialect, by its semantics, evaluates nothing: no output at all."""

    dialect: str
    reason: str
    applies: Callable[[W3CTest], bool]


SILENCES: tuple[Silence, ...] = (
    # C-SPARQL reports at window close only windows that hold something (CSRBench; SECRET's
    # non-empty content): an event with no triples leaves the window empty.
    Silence("csparql", "C-SPARQL evaluates no window without a triple (non-empty content); "
            "the data is empty", lambda t: not data_triples(t)),
)


# 002 defines a GPM's [[P]]_G as a *set* of mappings annotated with the event's time, and a
# match's Omega as their join (docs/semantics.md, "SPARQL 1.1 inside a GPM"): where SPARQL's
# bag repeats a row, SPASEQ gives it once. Its results are compared as sets.
SET_SEMANTICS = frozenset({"spaseq"})


@dataclass(frozen=True)
class Divergence:
    """A (test, dialect) whose dialect, by its semantics, cannot give SPARQL's one-shot answer
    and says so at run time with a known error."""

    dialect: str
    reason: str
    error: str  # the exception's class name


DIVERGENCES: tuple[Divergence, ...] = (
    # 003: a CONSTRUCT query is a rule whose triples re-enter the stream (the Q-closure); a
    # template whose blank nodes its own pattern matches derives new triples forever.
    Divergence("epsparql", "a CONSTRUCT rule whose blank-node triples its own pattern matches "
               "derives forever (003's Q-closure)", "RuleLoopError"),
)


def distinct(r: Result) -> Result:
    """The result with each row once (a set)."""
    if r.form not in ("bindings", "csv"):
        return r
    seen: dict[tuple, dict] = {}
    for row in r.rows:
        seen.setdefault(tuple(sorted(row.items())), row)
    return Result(r.form, list(seen.values()), r.boolean)


# The instant at which each dialect's answer over the event at 0 is read: C-SPARQL's
# windows are [c-1, c), so the event at 0 is in the window closing at 1; every other
# reading evaluates at 0 (window close at 0 of (-1, 0], or on the arrival).
UNTIL = {"csparql": 1}


def dialect_text(test: W3CTest, dialect: str) -> str:
    return rewrite(test.text(), dialect, base=test.query.as_uri())


def parse(test: W3CTest, dialect: str) -> Query:
    """The rewritten query through the dialect's ``parse_query`` (MATCH is RSP-QL's)."""
    from rsep.lang import parse_query

    return parse_query(dialect_text(test, dialect), "rspql" if dialect == "match" else dialect,
                       source=f"{test.id}[{dialect}]")


def run_query(test: W3CTest, dialect: str, query: Query) -> list[Output]:
    """A parsed query registered and run as ``rsep run`` does (Engine.register, Engine.run)
    over the test's one event: its outputs."""
    from rsep import Engine

    eng = Engine()
    eng.register(query, source=f"{test.id}[{dialect}]")
    return list(eng.run([event_of(test)], until=UNTIL.get(dialect)))


@dataclass
class Outcome:
    status: str  # "passed" | "refused" | "silent" | "failed"
    detail: str = ""
    reason: str = ""


def outcome(test: W3CTest, dialect: str) -> Outcome:
    """Run one (test, dialect) and judge it: a refusal the table expects must happen at parse
    time with its message, a silence must output nothing, anything else must give the W3C's
    expected result."""
    from rsep.lang import QueryError

    s = shape(test.text())
    expected = refusals(s, dialect)
    try:
        q = parse(test, dialect)
    except QueryError as e:
        hit = next((r for r in expected if r.matches(e.message)), None)
        if hit is not None:
            return Outcome("refused", str(e), hit.reason)
        why = f" (expected a refusal: {'; '.join(r.reason for r in expected)})" if expected else ""
        return Outcome("failed", f"refused at parse time: {e}{why}")
    if expected:
        return Outcome("failed", "expected a refusal at parse time: " + "; ".join(r.reason for r in expected))
    try:
        outs = run_query(test, dialect, q)
    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
        div = next((x for x in DIVERGENCES if x.dialect == dialect and x.error == type(e).__name__), None)
        if div is not None:
            return Outcome("refused", str(e), div.reason)
        return Outcome("failed", f"{type(e).__name__}: {e}")
    silence = next((x for x in SILENCES if x.dialect == dialect and x.applies(test)), None)
    if silence is not None:
        if outs:
            return Outcome("failed", f"expected no evaluation ({silence.reason}), got {len(outs)} outputs")
        return Outcome("silent", "", silence.reason)
    want, got = expected_result(test), outputs_result(s.form, outs)
    if dialect in SET_SEMANTICS:
        want, got = distinct(want), distinct(got)
    diff = difference(want, got, ordered(test))
    return Outcome("passed") if diff is None else Outcome("failed", diff)

@cache
def counted(root: Path | None = None) -> tuple[W3CTest, ...]:
    """The tests pyoxigraph itself passes: only those measure the dialects."""
    out = []
    for t in read_manifests(root):
        try:
            diff = difference(expected_result(t), pyoxigraph_result(t), ordered(t))
        except (SyntaxError, OSError, ValueError, RuntimeError):
            continue
        if diff is None:
            out.append(t)
    return tuple(out)


def report(dialects: Iterable[str] = DIALECTS, out: TextIO | None = None, failures: bool = True) -> dict:
    """Print, per dialect, counted / passed / refused and silent (by reason) / failed, with the
    time each dialect took and, unless ``failures`` is False, every failure."""
    out = out or sys.stdout
    tests = counted()
    candidates = len(read_manifests())
    summary: dict = {}
    failed: dict[str, list[tuple[str, str]]] = {}
    for d in dialects:
        t0 = time.perf_counter()
        c: Counter = Counter()
        reasons: Counter = Counter()
        for t in tests:
            o = outcome(t, d)
            c[o.status] += 1
            if o.status in ("refused", "silent"):
                reasons[(o.status, o.reason)] += 1
            elif o.status == "failed":
                failed.setdefault(d, []).append((t.id, o.detail))
        summary[d] = {"counted": len(tests), "passed": c["passed"], "refused": c["refused"],
                      "silent": c["silent"], "failed": c["failed"], "by_reason": dict(reasons),
                      "seconds": time.perf_counter() - t0}

    def say(line: str) -> None:
        print(line, file=out)

    say(f"W3C SPARQL 1.1 evaluation tests: {candidates} with one default graph in {len(DIRS)} "
        f"directories, {len(tests)} counted (pyoxigraph passes them)")
    say(f"{'dialect':10} {'counted':>7} {'passed':>7} {'refused':>7} {'silent':>7} {'failed':>7} {'seconds':>8}")
    for d, s in summary.items():
        say(f"{d:10} {s['counted']:>7} {s['passed']:>7} {s['refused']:>7} {s['silent']:>7} "
            f"{s['failed']:>7} {s['seconds']:>8.1f}")
        for (status, reason), n in sorted(s["by_reason"].items()):
            say(f"{'':10} {n:>7} {status}: {reason}")
    if failures:
        for d, items in failed.items():
            say(f"\nfailed in {d}:")
            for tid, detail in items:
                say(f"  {tid}: {detail[:300]}")
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["architecture"]:  # rewrite docs/architecture.md's diagram from the code
        doc = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
        doc.write_text(architecture_doc_with_diagram(doc.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if not args or args[0] != "w3c":
        print("usage: python -m rsep.testing w3c [DIALECT ...] [--quiet] | architecture", file=sys.stderr)
        return 2
    import warnings

    warnings.simplefilter("ignore")
    dialects = [a for a in args[1:] if not a.startswith("-")] or list(DIALECTS)
    report(dialects, failures="--quiet" not in args)
    return 0



# ---------------------------------------------------------------- docs/architecture.md

_DIAGRAM_BEGIN, _DIAGRAM_END = "<!-- diagram: python -m rsep.testing architecture -->", "<!-- end of diagram -->"


def architecture_diagram() -> str:
    """rsep's packages and which import which (type-checking imports aside), as a Mermaid
    flowchart, read from the code with grimp (import-linter's graph builder)."""
    import grimp

    g = grimp.build_graph("rsep", exclude_type_checking_imports=True)

    def package(m: str) -> str | None:
        parts = m.split(".")
        return parts[1] if len(parts) > 2 or (len(parts) == 2 and g.find_children(m)) else None

    edges: set[tuple[str, str]] = set()
    for m in g.modules:
        a = package(m)
        for t in g.find_modules_directly_imported_by(m):
            b = package(t)
            if a and b and a != b:
                edges.add((a, b))
    lines = ["```mermaid", "flowchart TD"]
    lines += [f"    {a} --> {b}" for a, b in sorted(edges)]
    lines.append("```")
    return "\n".join(lines)


def architecture_doc_with_diagram(text: str) -> str:
    """docs/architecture.md with its diagram replaced by the one the code gives now."""
    a = text.index(_DIAGRAM_BEGIN) + len(_DIAGRAM_BEGIN)
    b = text.index(_DIAGRAM_END)
    return text[:a] + "\n" + architecture_diagram() + "\n" + text[b:]


if __name__ == "__main__":
    sys.exit(main())
