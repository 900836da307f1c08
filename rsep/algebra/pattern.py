"""SPARQL 1.1's graph patterns (Sec. 18.2) as plain frozen data, with RSP-QL's and
RSEP-QL's two additions, and :func:`to_sparql`, which writes any tree back as SPARQL 1.1
text for pyoxigraph.

A query's WHERE clause is translated as Sec. 18.2.2.6 translates a group: FILTERs gathered
to the group's end (:class:`Filter`), OPTIONAL as :class:`LeftJoin` (its group's own FILTER
its condition), BIND as :class:`Extend`, triples blocks that only FILTERs separate in one
:class:`BGP`, and a join with the empty group left out. :func:`to_sparql` writes every
operator inside braces of its own, so that pyoxigraph's translation of the text is the
tree again: the text is not the query as written, but it has the same answers
(tests/algebra/test_pattern.py holds every query of the house and the W3C suite to that).

The additions: :class:`WindowGraph` (RSP-QL's ``WINDOW w { P }``, a CQELS stream
pattern: P over the window's contents, written ``GRAPH w { P }`` as rsep's evaluators
hold each window as a named graph) and :class:`MatchSlot` (where an RSEP-QL MATCH's
solutions enter: written as the empty VALUES block the runtime fills in).

A query's (and a sub-query's) projection and solution modifiers are
rsep.algebra.modifiers' records (:class:`Modifiers`, written by its ``select_head`` and
``modifiers_text``).

Terms and expressions are rsep.algebra.expression's nodes, kept as written (a prefixed
name stays one; :class:`Prologue` carries the declarations that read them). What SPARQL
has but rsep does not evaluate is held in the tree and refused, located, when it is
written (:class:`Service`: :class:`PatternRefused`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import Exists, Expression, Iri, Literal, PrefixedName, Variable, walk

# The solution modifiers are part of the tree (a Query's and a SubSelect's): its readers
# (rsep.lang, rsep.lars, rsep.windows) read them here as the tree's other nodes.
from rsep.algebra.modifiers import GroupKey as GroupKey
from rsep.algebra.modifiers import Modifiers as Modifiers
from rsep.algebra.modifiers import OrderKey as OrderKey
from rsep.algebra.modifiers import Projected as Projected
from rsep.algebra.modifiers import Written as Written
from rsep.algebra.modifiers import expressions, modifiers_text, select_head

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
# The base of relative IRIs when the query declares none (SPARQL leaves it to the
# application; RFC 2606 reserves .invalid, so it never names anything real).
DEFAULT_BASE = "http://rsep.invalid/"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class PatternRefused(ValueError):
    """What the tree holds but cannot be given to pyoxigraph, where it stands."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        at = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(message + at)
        self.reason = message
        self.line = line
        self.column = column


# ---------------------------------------------------------------- terms


@dataclass(frozen=True, slots=True)
class BlankNode:
    """``_:label`` in a pattern (a variable no solution shows) or a template (a new blank
    node per solution); ``[]``, collections and ``[ p o ]`` get labels of their own.
    ``made`` (out of equality: a fact of the text, for rsep.lars's model) says which a label
    of its own stands for: ``anon`` a ``[]``, ``list`` a ``[ p o ]`` or a collection's cell,
    ``""`` a label written."""

    label: str
    made: str = field(default="", compare=False)

    def to_sparql(self) -> str:
        return "_:" + self.label


Term = Variable | Iri | PrefixedName | Literal | BlankNode


# ---------------------------------------------------------------- property paths (Sec. 9)


@dataclass(frozen=True, slots=True)
class Inverse:
    """``^path``."""

    path: Path


@dataclass(frozen=True, slots=True)
class Sequence:
    """``path1 / path2 / ...``."""

    parts: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class Alternative:
    """``path1 | path2 | ...``."""

    parts: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """``path?``, ``path*`` or ``path+`` (``mod``)."""

    path: Path
    mod: str


@dataclass(frozen=True, slots=True)
class NegatedSet:
    """``!(iri | ^iri ...)``: ``forward`` the IRIs, ``inverse`` the ``^`` ones."""

    forward: tuple[Iri | PrefixedName, ...]
    inverse: tuple[Iri | PrefixedName, ...]


Path = Iri | PrefixedName | Inverse | Sequence | Alternative | Repeat | NegatedSet


@dataclass(frozen=True, slots=True)
class Triple:
    """A triple pattern, or a path pattern when its predicate is a :data:`Path` that is
    not one IRI."""

    subject: Term
    predicate: Term | Path
    object: Term


# ---------------------------------------------------------------- graph patterns


class Pattern:
    """A graph pattern; its operands in :meth:`kids`."""

    __slots__ = ()

    def kids(self) -> tuple[Pattern, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class BGP(Pattern):
    """A basic graph pattern (path patterns included); ``()`` is the empty group, the one
    empty solution. ``blocks`` (out of equality, a fact of the text for rsep.lars's model):
    how many triples each triples block as written holds, when FILTERs between them were
    gathered and the blocks merged (Sec. 18.2.2.6); () when not read from a group."""

    triples: tuple[Triple, ...] = ()
    blocks: tuple[int, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Join(Pattern):
    left: Pattern
    right: Pattern

    def kids(self) -> tuple[Pattern, ...]:
        return (self.left, self.right)


@dataclass(frozen=True, slots=True)
class LeftJoin(Pattern):
    """``left OPTIONAL { right FILTER(condition) }``; ``group`` (out of equality, a fact
    of the text for rsep.lars's model): the OPTIONAL's group as read, a :class:`Filter`
    whose conjunction of FILTERs ``condition`` is (None: it had none)."""

    left: Pattern
    right: Pattern
    condition: Expression | None = None
    group: Pattern | None = field(default=None, compare=False)

    def kids(self) -> tuple[Pattern, ...]:
        return (self.left, self.right)


@dataclass(frozen=True, slots=True)
class Union(Pattern):
    left: Pattern
    right: Pattern

    def kids(self) -> tuple[Pattern, ...]:
        return (self.left, self.right)


@dataclass(frozen=True, slots=True)
class Minus(Pattern):
    left: Pattern
    right: Pattern

    def kids(self) -> tuple[Pattern, ...]:
        return (self.left, self.right)


@dataclass(frozen=True, slots=True)
class Filter(Pattern):
    """A group's FILTERs, in the order written (their conjunction filters ``arg``).
    ``after`` (out of equality, a fact of the text for rsep.lars's model): per FILTER, how
    many of ``arg``'s :func:`units` were written before it (() when not read from text)."""

    conditions: tuple[Expression, ...]
    arg: Pattern
    after: tuple[int, ...] = field(default=(), compare=False)

    def kids(self) -> tuple[Pattern, ...]:
        return (self.arg,)


@dataclass(frozen=True, slots=True)
class Extend(Pattern):
    """``BIND(expr AS ?var)`` after ``arg``."""

    arg: Pattern
    var: Variable
    expr: Expression

    def kids(self) -> tuple[Pattern, ...]:
        return (self.arg,)


@dataclass(frozen=True, slots=True)
class Graph(Pattern):
    """``GRAPH name { arg }``."""

    name: Variable | Iri | PrefixedName
    arg: Pattern

    def kids(self) -> tuple[Pattern, ...]:
        return (self.arg,)


@dataclass(frozen=True, slots=True)
class WindowGraph(Pattern):
    """``arg`` over a window's contents (RSP-QL's ``WINDOW w { arg }``, 000 Eq. 3, or a
    CQELS ``STREAM s [window] { arg }``): ``window`` the window's absolute IRI, or a
    variable ranging over the query's windows."""

    window: Variable | Iri
    arg: Pattern

    def kids(self) -> tuple[Pattern, ...]:
        return (self.arg,)


@dataclass(frozen=True, slots=True)
class Service(Pattern):
    """``SERVICE [SILENT] target { arg }``: parsed, refused when written (rsep reaches no
    endpoint); ``at`` (line, column) of the keyword."""

    target: Variable | Iri | PrefixedName
    arg: Pattern
    silent: bool = False
    at: tuple[int, int] | None = None

    def kids(self) -> tuple[Pattern, ...]:
        return (self.arg,)


@dataclass(frozen=True, slots=True)
class Values(Pattern):
    """``VALUES (names) { rows }`` (None: UNDEF)."""

    names: tuple[str, ...]
    rows: tuple[tuple[Iri | PrefixedName | Literal | None, ...], ...]


@dataclass(frozen=True, slots=True)
class MatchSlot(Pattern):
    """Where the solutions of the query's ``index``-th MATCH enter (RSEP-QL, 000 Sec. 3.3):
    its event pattern's variables (and ?_from ?_to when the query reads them). Written as
    the empty VALUES block rsep.algebra.events.MatchPattern.slot names, which the runtime
    fills with the MATCH's solutions at each evaluation."""

    index: int
    variables: tuple[str, ...]

    @property
    def slot(self) -> str:
        names = " ".join("?" + v for v in self.variables)
        return f"VALUES ({names}) {{ }} # rsep-match-{self.index}\n"


@dataclass(frozen=True, slots=True)
class SubSelect(Pattern):
    """``{ SELECT ... }`` inside a group."""

    pattern: Pattern
    modifiers: Modifiers
    values: Values | None = None

    def kids(self) -> tuple[Pattern, ...]:
        return (self.pattern,)


@dataclass(frozen=True, slots=True)
class Prologue:
    """The BASE (None: none given, nor needed) and the prefixes, absolute."""

    base: str | None = None
    prefixes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Query:
    """A query's algebraic expression: its form (SELECT, CONSTRUCT, ASK, DESCRIBE), its
    WHERE pattern (None: a DESCRIBE without one), the modifiers, CONSTRUCT's template,
    DESCRIBE's resources (None: ``*``) and a trailing VALUES. The dataset is not here: the
    dialects read it into rsep.algebra.dataset.StreamingDataset.

    Two facts of the text that the algebra drops, kept for readers that take only some
    shapes of query (rsep.windows.plan) and left out of equality (as are BGP's ``blocks``,
    Filter's ``after``, LeftJoin's ``group`` and BlankNode's ``made``, for rsep.lars's
    model) (the text
    :func:`to_sparql` writes has the same tree): ``elements``, the kinds of the WHERE
    group's elements in the order written (``triples``, ``FILTER``, ``GRAPH``, ``WINDOW``,
    ``STREAM``, ``group`` for a nested group or UNION, ``OPTIONAL``, ``MINUS``, ``BIND``,
    ``VALUES``, ``SERVICE``, ``MATCH``; Sec. 18.2.2.6 merges triples blocks, gathers the
    FILTERs and joins a nested group's pattern as if written flat), ``short_form``,
    ``CONSTRUCT WHERE { template }``, and a SELECT's clauses as ``written``."""

    form: str
    pattern: Pattern | None
    modifiers: Modifiers = Modifiers()
    prologue: Prologue = Prologue()
    template: tuple[Triple, ...] = ()
    describe: tuple[Variable | Iri | PrefixedName, ...] | None = None
    values: Values | None = None
    elements: tuple[str, ...] = field(default=(), compare=False)
    short_form: bool = field(default=False, compare=False)
    written: Written | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ExistsPattern(Exists):
    """``[NOT] EXISTS { group }`` with its group as a tree (``pattern`` the group's text as
    :func:`to_sparql` writes it, for the readers of rsep.algebra.expression.Exists)."""

    group: Pattern | None = None

    def to_sparql(self) -> str:
        head = "NOT EXISTS" if self.negated else "EXISTS"
        return f"{head} {self.pattern if self.group is None else group(self.group)}"


def exists(group_pattern: Pattern, negated: bool = False,
           names: frozenset[str] | None = None) -> ExistsPattern:
    """An EXISTS over a tree, with the variables it mentions (by default those its patterns
    bind)."""
    if names is None:
        names = frozenset(v.name for v in _variables(group_pattern))
    return ExistsPattern(group(group_pattern), negated, names, group_pattern)


def nodes(p: Pattern) -> Iterator[Pattern]:
    """The patterns of ``p``, parents first, left to right (sub-queries' included, those of
    EXISTS not)."""
    yield p
    for k in p.kids():
        yield from nodes(k)


def _variables(p: Pattern) -> Iterator[Variable]:
    for n in nodes(p):
        if isinstance(n, BGP):
            for t in n.triples:
                for x in (t.subject, t.predicate, t.object):
                    if isinstance(x, Variable):
                        yield x
        elif isinstance(n, Values):
            yield from (Variable(v) for v in n.names)
        elif isinstance(n, MatchSlot):
            yield from (Variable(v) for v in n.variables)
        elif isinstance(n, Extend):
            yield n.var
        elif isinstance(n, (Graph, WindowGraph, Service)):
            x = n.name if isinstance(n, Graph) else n.window if isinstance(n, WindowGraph) \
                else n.target
            if isinstance(x, Variable):
                yield x


Unit = Pattern | tuple[BGP, int]


def units(p: Pattern) -> list[Unit]:
    """A group's pattern (its FILTERs aside) as the elements written, in order, that Sec.
    18.2.2.6 folded into it: each triples block (``(bgp, i)``: the i-th of ``bgp.blocks``),
    and each other element as the node it made (an OPTIONAL's LeftJoin, a MINUS, a BIND's
    Extend, the right operand of a join). A nested group's elements count as written
    in place when nothing came before it (the empty group's join left it bare)."""
    if isinstance(p, BGP):
        return [(p, i) for i in range(len(p.blocks or ((len(p.triples),) if p.triples else ())))]
    if isinstance(p, Join):
        right = units(p.right) if isinstance(p.right, BGP) and p.right.triples else [p.right]
        return units(p.left) + right
    if isinstance(p, (LeftJoin, Minus)):
        return units(p.left) + [p]
    if isinstance(p, Extend):
        return units(p.arg) + [p]
    return [p]


def block(u: tuple[BGP, int]) -> tuple[Triple, ...]:
    """The triples of a triples block of :func:`units`."""
    bgp, i = u
    sizes = bgp.blocks or (len(bgp.triples),)
    at = sum(sizes[:i])
    return bgp.triples[at:at + sizes[i]]


def every_pattern(tree: Query | Pattern) -> Iterator[Pattern]:
    """Every pattern of ``tree``, parents first, left to right, those of its EXISTS
    expressions (in FILTERs, OPTIONAL's condition, BIND, the solution modifiers) and
    sub-queries included: a node's patterns before those of its expressions."""
    if isinstance(tree, Query):
        if tree.pattern is not None:
            yield from every_pattern(tree.pattern)
        yield from _expression_patterns(expressions(tree.modifiers))
        return
    yield tree
    for k in tree.kids():
        yield from every_pattern(k)
    if isinstance(tree, Filter):
        yield from _expression_patterns(tree.conditions)
    elif isinstance(tree, LeftJoin) and tree.condition is not None:
        yield from _expression_patterns((tree.condition,))
    elif isinstance(tree, Extend):
        yield from _expression_patterns((tree.expr,))
    elif isinstance(tree, SubSelect):
        yield from _expression_patterns(expressions(tree.modifiers))


def _expression_patterns(es: tuple[Expression, ...] | list[Expression]) -> Iterator[Pattern]:
    for e in es:
        for x in walk(e):
            if isinstance(x, ExistsPattern) and x.group is not None:
                yield from every_pattern(x.group)


def in_scope(p: Pattern) -> set[str]:
    """The variables in scope in ``p`` (SPARQL 1.1 Sec. 18.2.1): those of its triples and
    paths (not blank nodes), GRAPH's and a window's variable, BIND's, VALUES', a MATCH's, a
    sub-query's projected ones; MINUS's right side, FILTERs and EXISTS add none."""
    out: set[str] = set()
    todo = [p]
    while todo:
        n = todo.pop()
        if isinstance(n, BGP):
            out.update(x.name for t in n.triples for x in (t.subject, t.predicate, t.object)
                       if isinstance(x, Variable))
        elif isinstance(n, (Values, MatchSlot)):
            out.update(n.names if isinstance(n, Values) else n.variables)
        elif isinstance(n, SubSelect):
            out.update(_projected(n.modifiers, n.pattern, n.values))
        elif isinstance(n, Minus):
            todo.append(n.left)
        else:
            if isinstance(n, Extend):
                out.add(n.var.name)
            elif isinstance(n, (Graph, WindowGraph, Service)):
                x = n.name if isinstance(n, Graph) else n.window if isinstance(n, WindowGraph) \
                    else n.target
                if isinstance(x, Variable):
                    out.add(x.name)
            todo.extend(n.kids())
    return out


def _projected(m: Modifiers, p: Pattern | None, values: Values | None) -> list[str]:
    if m.projection is not None:
        return [x.var for x in m.projection]
    names = set() if p is None else in_scope(p)
    if values is not None:
        names.update(values.names)
    return sorted(names)  # (pyoxigraph's order for SELECT *: by name)


def projected_names(q: Query) -> list[str]:
    """The variables of a SELECT query's solutions, in the order pyoxigraph gives them:
    as projected, or for ``SELECT *`` the variables in scope (the trailing VALUES' included)
    by name, as pyoxigraph (spargebra) orders them."""
    return _projected(q.modifiers, q.pattern, q.values)


# ---------------------------------------------------------------- IRIs


def is_absolute(iri: str) -> bool:
    return bool(_SCHEME.match(iri))


def resolve_iri(ref: str, base: str) -> str:
    """RFC 3986 reference resolution, done by oxigraph so it agrees with the evaluator's."""
    if is_absolute(ref):
        return ref
    quad = next(iter(ox.parse(f"<{ref}> <urn:p> <urn:o> .", format=ox.RdfFormat.TURTLE,
                              base_iri=base)))
    return quad.subject.value


def absolute(name: Iri | PrefixedName, prologue: Prologue) -> str:
    """An IRI of the tree made absolute by the query's prologue (a relative one against its
    BASE, or :data:`DEFAULT_BASE`); ValueError for an undeclared prefix."""
    if isinstance(name, PrefixedName):
        prefixes = dict(prologue.prefixes)
        if name.prefix not in prefixes:
            raise ValueError(f"undeclared prefix '{name.prefix}:'")
        return prefixes[name.prefix] + re.sub(r"\\(.)", r"\1", name.local)
    return resolve_iri(name.value, prologue.base or DEFAULT_BASE)


def prologue_text(prologue: Prologue) -> str:
    """BASE and PREFIX declarations that make a fragment of the query stand alone."""
    out = f"BASE <{prologue.base or DEFAULT_BASE}>\n"
    return out + "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in prologue.prefixes)


# ---------------------------------------------------------------- writing


def to_sparql(tree: Query | Pattern) -> str:
    """SPARQL 1.1 text with the same answers as ``tree`` (a :class:`Pattern` is written as
    a group); :class:`PatternRefused` for what pyoxigraph is not to be given."""
    if isinstance(tree, Pattern):
        return group(tree)
    head = ""
    if tree.prologue.base is not None:
        head += f"BASE {Iri(tree.prologue.base).to_sparql()}\n"
    for prefix, iri in tree.prologue.prefixes:
        head += f"PREFIX {prefix}: {Iri(iri).to_sparql()}\n"
    m = tree.modifiers
    if tree.form == "SELECT":
        head += select_head(m)
    elif tree.form == "CONSTRUCT":
        head += "CONSTRUCT { " + _triples(tree.template) + "}\n"
    elif tree.form == "ASK":
        head += "ASK\n"
    elif tree.form == "DESCRIBE":
        targets = "*" if tree.describe is None else " ".join(t.to_sparql() for t in tree.describe)
        head += f"DESCRIBE {targets}\n"
    else:
        raise ValueError(f"unknown query form {tree.form}")
    body = "" if tree.pattern is None else "WHERE " + group(tree.pattern) + "\n"
    tail = "" if tree.values is None else _values(tree.values) + "\n"
    return head + body + modifiers_text(m) + tail


def written(tree: Query | Pattern | None, text: str) -> str:
    """What pyoxigraph is given for a query or a group: ``tree`` written by to_sparql, or
    ``text``, its source, where there is no tree (the tree builder refused the source) or
    to_sparql refuses the tree (SERVICE): the text is left only for what the tree lacks."""
    if tree is None:
        return text
    try:
        return to_sparql(tree)
    except PatternRefused:
        return text


def group(p: Pattern) -> str:
    """``p`` as a group graph pattern ``{ ... }``."""
    inner = " ".join(_elements(p))
    return "{ " + inner + " }" if inner else "{ }"


def _elements(p: Pattern) -> list[str]:
    """Group elements whose translation (Sec. 18.2.2.6) is ``p``: every operand a group of
    its own, so that no FILTER of one reaches another."""
    if isinstance(p, BGP):
        return [_triples(p.triples)] if p.triples else []
    if isinstance(p, Join):
        return [group(p.left), group(p.right)]
    if isinstance(p, LeftJoin):
        cond = "" if p.condition is None else f" FILTER({p.condition.to_sparql()})"
        return [group(p.left), "OPTIONAL { " + group(p.right) + cond + " }"]
    if isinstance(p, Union):
        return [group(p.left) + " UNION " + group(p.right)]
    if isinstance(p, Minus):
        return [group(p.left), "MINUS " + group(p.right)]
    if isinstance(p, Filter):
        return [group(p.arg)] + [f"FILTER({c.to_sparql()})" for c in p.conditions]
    if isinstance(p, Extend):
        return [group(p.arg), f"BIND({p.expr.to_sparql()} AS ?{p.var.name})"]
    if isinstance(p, Graph):
        return [f"GRAPH {p.name.to_sparql()} {group(p.arg)}"]
    if isinstance(p, WindowGraph):
        return [f"GRAPH {p.window.to_sparql()} {group(p.arg)}"]
    if isinstance(p, Values):
        return [_values(p)]
    if isinstance(p, MatchSlot):
        return [p.slot]
    if isinstance(p, SubSelect):
        tail = "" if p.values is None else " " + _values(p.values)
        return ["{ " + select_head(p.modifiers) + "WHERE " + group(p.pattern) + "\n"
                + modifiers_text(p.modifiers) + tail + " }"]
    if isinstance(p, Service):
        line, col = p.at or (None, None)
        raise PatternRefused("SERVICE: rsep queries no remote endpoint", line, col)
    raise TypeError(f"not a graph pattern: {p!r}")


def fill_match_slots(tree: Query, filled: Mapping[int, Values]) -> Query:
    """``tree`` with each :class:`MatchSlot` of the given indexes replaced by its VALUES
    (RSEP-QL's Eq. (8): a MATCH's solutions at an instant join the WHERE pattern)."""
    if tree.pattern is None:
        return tree
    return replace(tree, pattern=_fill(tree.pattern, filled))


def slot_template(tree: Query) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """``to_sparql(tree)`` cut where its MatchSlots are written: the texts around them and,
    per cut, the index of the MATCH whose VALUES block goes there. Joining the texts with
    the blocks gives ``to_sparql(fill_match_slots(tree, filled))`` for the same blocks
    without writing the tree again at each evaluation (tests/algebra/test_pattern.py holds
    the two equal). None where to_sparql refuses the tree, or a slot is not written exactly
    once where fill_match_slots reaches it."""
    slots = [] if tree.pattern is None else [n for n in nodes(tree.pattern)
                                             if isinstance(n, MatchSlot)]
    try:
        text = to_sparql(tree)
        reached = to_sparql(fill_match_slots(tree, {s.index: Values((), ()) for s in slots}))
    except PatternRefused:
        return None
    if "# rsep-match-" in reached or any(text.count(s.slot) != 1 for s in slots):
        return None
    parts, order, pos = [], [], 0
    for i, s in sorted(((text.index(s.slot), s) for s in slots), key=lambda x: x[0]):
        parts.append(text[pos:i])
        order.append(s.index)
        pos = i + len(s.slot)
    parts.append(text[pos:])
    return tuple(parts), tuple(order)


def values_text(v: Values) -> str:
    """A VALUES block as to_sparql writes it in a group."""
    return _values(v)


def _fill(p: Pattern, filled: Mapping[int, Values]) -> Pattern:
    if isinstance(p, MatchSlot):
        return filled.get(p.index, p)
    node: Any = p  # (every Pattern but the base is a dataclass)
    changes = {f.name: _fill(v, filled) for f in fields(node)
               if isinstance(v := getattr(node, f.name), Pattern) and not isinstance(v, Values)}
    return replace(node, **changes) if changes else p


def _values(v: Values) -> str:
    rows = " ".join("(" + " ".join("UNDEF" if x is None else x.to_sparql() for x in r) + ")"
                    for r in v.rows)
    return f"VALUES ({' '.join('?' + n for n in v.names)}) {{ {rows} }}"


def _triples(ts: tuple[Triple, ...]) -> str:
    return "".join(f"{_term(t.subject)} {_predicate(t.predicate)} {_term(t.object)} . " for t in ts)


def _term(t: Term) -> str:
    return t.to_sparql()


def _predicate(p: Term | Path) -> str:
    if isinstance(p, (Variable, Iri, PrefixedName, Literal, BlankNode)):
        return p.to_sparql()
    return "(" + path_text(p) + ")"


def path_text(p: Path) -> str:
    """A property path, every operation in parentheses."""
    if isinstance(p, (Iri, PrefixedName)):
        return p.to_sparql()
    if isinstance(p, Inverse):
        return f"^({path_text(p.path)})"
    if isinstance(p, Sequence):
        return "(" + " / ".join(path_text(x) for x in p.parts) + ")"
    if isinstance(p, Alternative):
        return "(" + " | ".join(path_text(x) for x in p.parts) + ")"
    if isinstance(p, Repeat):
        return f"({path_text(p.path)}){p.mod}"
    if isinstance(p, NegatedSet):
        items = [i.to_sparql() for i in p.forward] + ["^" + i.to_sparql() for i in p.inverse]
        return "!(" + " | ".join(items) + ")"
    raise TypeError(f"not a path: {p!r}")
