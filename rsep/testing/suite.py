"""The W3C SPARQL 1.1 evaluation tests (rsep.testing): the manifests, each test's expected
result, and results compared as bags, up to blank nodes and literal values."""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyoxigraph as ox

from rsep.sparql.store import quads

if TYPE_CHECKING:
    from rsep.algebra.output import Output

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
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "w3c-sparql11"


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
        order = {str(t): i for i, t in enumerate(_entries(store))}
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


def _entries(store: ox.Store) -> list[ox.NamedNode | ox.BlankNode]:
    """The manifest's ``mf:entries`` list, in list order: walked link by link (a property
    path's solutions come in no set order, and test ids must be the same in every process)."""
    rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    first, rest, nil = ox.NamedNode(rdf + "first"), ox.NamedNode(rdf + "rest"), ox.NamedNode(rdf + "nil")
    out: list[ox.NamedNode | ox.BlankNode] = []
    for head in store.quads_for_pattern(None, ox.NamedNode(MF + "entries"), None):
        node = head.object
        while isinstance(node, (ox.NamedNode, ox.BlankNode)) and node != nil:
            out.extend(q.object for q in store.quads_for_pattern(node, first, None)
                       if isinstance(q.object, (ox.NamedNode, ox.BlankNode)))
            node = next(store.quads_for_pattern(node, rest, None)).object
    return out


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
    store.extend(quads(data_triples(test), ox.DefaultGraph()))
    return _solutions(store.query(test.text(), base_iri=test.query.as_uri()))


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
