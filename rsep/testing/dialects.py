"""A SPARQL 1.1 query inside each rsep dialect (rsep.testing): its shape read from the text,
the text rewritten for each dialect, and the constructs a dialect refuses by design."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from lark import Tree

from rsep.lang.parser import parse_tree
from rsep.testing.suite import STREAM, WINDOW

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
