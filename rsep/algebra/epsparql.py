"""EP-SPARQL's algebra (003 Sec. 4.2): SPARQL's, with SeqJoin, EqJoin, SeqRightJoin and
EqLeftJoin, over interval-timestamped triples; the query, and its policy (RSEP-QL's, 000, or
ETALIS's own step-wise one). Plain data: the evaluators are in ``rsep.epsparql.reference`` (the
Sec. 4.2 semantics, reference and incremental), ``rsep.epsparql.policy`` and
``rsep.epsparql.etalis``."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from rsep.algebra.events import Selection
from rsep.algebra.expression import Exists, Expression, conjunction, walk
from rsep.algebra.mapping import SolutionMapping

INF = float("inf")
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SUBCLASS, SUBPROP = f"<{RDFS}subClassOf>", f"<{RDFS}subPropertyOf>"
DOMAIN, RANGE = f"<{RDFS}domain>", f"<{RDFS}range>"
XSD = "http://www.w3.org/2001/XMLSchema#"

Mu = SolutionMapping[str]  # SPARQL's mappings (rsep.algebra.mapping) of N-Triples terms


# ---------------------------------------------------------------- algebra


@dataclass(frozen=True, slots=True)
class Var:
    name: str


Term = Var | str  # a variable or an N-Triples term
TriplePattern = tuple[Term, Term, Term]


@dataclass(frozen=True, eq=False)
class Expr:
    """A SPARQL expression, getDURATION()/getSTARTTIME()/getENDTIME() replaced by the
    variables ?__d, ?__s, ?__e (the substitution sigma of Sec. 4.2): its text (what
    pyoxigraph is given), the variables it reads but sigma's, the prologue, and its tree
    (rsep.algebra.expression; None for ORDER BY's conditions, and for an expression made
    from text alone, whose tree the evaluator reads from the text)."""

    text: str
    variables: frozenset[str]
    prologue: str = ""
    tree: Expression | None = None

    @staticmethod
    def of(tree: Expression, prologue: str = "") -> Expr:
        """An expression made from its tree (text written by the tree)."""
        names = frozenset(v for v in tree.variables() if v not in TIME_VARIABLES)
        return Expr(tree.to_sparql(), names, prologue, tree)

    # cached: the evaluators ask at every evaluation, and a walk of the tree costs more
    # than the regular expression on the text it replaced
    @cached_property
    def timed(self) -> bool:
        """It reads a time function."""
        if self.tree is None:
            return bool(re.search(r"\?__[dse]\b", self.text))
        return not TIME_VARIABLES.isdisjoint(self.tree.variables())

    @cached_property
    def reads(self) -> bool:
        """It holds EXISTS / NOT EXISTS: its value depends on the data, not only on mu."""
        if self.tree is None:
            return bool(_EXISTS.search(self.text))
        return any(isinstance(n, Exists) for n in walk(self.tree))


def conjoin(conds: list[Expr]) -> Expr:
    """``c1 && c2 && ...`` of one or more expressions (the first's prologue)."""
    if len(conds) == 1:
        return conds[0]
    trees = [c.tree for c in conds if c.tree is not None]
    return Expr(" && ".join(f"({c.text})" for c in conds),
                frozenset().union(*(c.variables for c in conds)), conds[0].prologue,
                conjunction(trees) if len(trees) == len(conds) else None)


# sigma's variables: getDURATION(), getSTARTTIME(), getENDTIME()
TIME_VARIABLES = frozenset(("__d", "__s", "__e"))
_EXISTS = re.compile(r"\bEXISTS\s*\{", re.I)


class Node:
    """An algebra expression; operands in ``kids``."""

    @property
    def kids(self) -> tuple[Node, ...]:
        return ()


@dataclass(eq=False)
class Unit(Node):
    """The empty group: the one solution ({}, +inf, -inf), neutral for min/max."""


@dataclass(eq=False)
class BGP(Node):
    patterns: tuple[TriplePattern, ...]


@dataclass(eq=False)
class Background(Node):
    """GRAPH <iri> { triples }: matched against a background graph (with its RDFS
    closure); its solutions are timeless, (+inf, -inf)."""

    iri: str
    patterns: tuple[TriplePattern, ...]


@dataclass(eq=False)
class Binary(Node):
    left: Node
    right: Node
    cond: Expr | None = None

    @property
    def kids(self) -> tuple[Node, ...]:
        return (self.left, self.right)


class Join(Binary):
    """P1 AND P2: compatible solutions, interval [min start, max end]."""


class Union(Binary):
    """P1 UNION P2."""


class LeftJoin(Binary):
    """P1 OPTIONAL P2: the optional part joins only if it ends no later than P1."""


class SeqJoin(Binary):
    """P1 SEQ P2: P1 ends before P2 starts (t_omega < t'_alpha)."""


class SeqRightJoin(Binary):
    """P1 OPTIONALSEQ P2: P2, preceded by P1 when there is such a P1."""


class EqJoin(Binary):
    """P1 EQUALS P2: both span the same interval."""


class EqLeftJoin(Binary):
    """P1 EQUALSOPTIONAL P2: P1, with P2 over the same interval when there is one."""


class Minus(Binary):
    """P1 MINUS P2: the P1 solutions with no compatible P2 solution that shares a variable
    with it and ends no later (LeftJoin's time condition)."""


@dataclass(eq=False)
class Path(Node):
    """A triple pattern whose predicate is a property path (with what its object nests):
    evaluated by pyoxigraph inside one stream item, whose interval its solutions carry."""

    text: str
    names: tuple[str, ...]
    prologue: str = ""


@dataclass(eq=False)
class OrderBy(Node):
    """ORDER BY: the solutions detected at one instant, in the order of the conditions."""

    arg: Node
    keys: Expr  # the order conditions, as written

    @property
    def kids(self) -> tuple[Node, ...]:
        return (self.arg,)


@dataclass(eq=False)
class Values(Node):
    """VALUES (inline or trailing): timeless solutions, like the empty group's."""

    names: tuple[str, ...]
    rows: tuple[Mu, ...]


@dataclass(eq=False)
class Filter(Node):
    cond: Expr
    arg: Node

    @property
    def kids(self) -> tuple[Node, ...]:
        return (self.arg,)


@dataclass(eq=False)
class Extend(Node):
    arg: Node
    var: str
    expr: Expr

    @property
    def kids(self) -> tuple[Node, ...]:
        return (self.arg,)


@dataclass(eq=False)
class Project(Node):
    """SELECT (of a sub-query or of the query): variables and (expr AS ?v), in order."""

    arg: Node
    items: tuple[tuple[str, Expr | None], ...] | None  # None: SELECT *
    distinct: bool = False

    @property
    def kids(self) -> tuple[Node, ...]:
        return (self.arg,)


def variables(n: Node) -> list[str]:
    """In-scope variables of a pattern, in order of appearance."""
    out: list[str] = []

    def add(v: str) -> None:
        if v not in out and not v.startswith("_b"):
            out.append(v)

    def walk(x: Node) -> None:
        if isinstance(x, (BGP, Background)):
            for tp in x.patterns:
                for t in tp:
                    if isinstance(t, Var):
                        add(t.name)
        elif isinstance(x, (Path, Values)):
            for v in x.names:
                add(v)
        elif isinstance(x, Minus):
            walk(x.left)
        elif isinstance(x, Project):
            if x.items is None:
                walk(x.arg)
            else:
                for v, _ in x.items:
                    add(v)
        elif isinstance(x, Extend):
            walk(x.arg)
            add(x.var)
        else:
            for k in x.kids:
                walk(k)

    walk(n)
    return out


def nodes(n: Node) -> Iterable[Node]:
    yield n
    for k in n.kids:
        yield from nodes(k)


def static(n: Node) -> bool:
    """n reads no stream: its solutions are timeless and never change."""
    if isinstance(n, (Unit, Background, Values)):
        return True
    if isinstance(n, (BGP, Path)):
        return False
    return all(static(k) for k in n.kids)


def reads_history(n: Node) -> bool:
    """n holds an EXISTS, which sees every visible occurrence that ended by then."""
    return any(isinstance(x, (Filter, Extend)) and (x.cond if isinstance(x, Filter) else x.expr).reads
               or isinstance(x, Project) and any(e is not None and e.reads for _, e in x.items or ())
               or isinstance(x, Binary) and x.cond is not None and x.cond.reads
               for x in nodes(n))


class EtalisPolicy(enum.Enum):
    """ETALIS's event_consumption_policy flag (flags.P), as an rsep policy name."""

    CHRONOLOGICAL = "etalis-chronological"
    RECENT = "etalis-recent"

    @property
    def recent(self) -> bool:
        return self is EtalisPolicy.RECENT


ETALIS_POLICIES = tuple(p.value for p in EtalisPolicy)


def parse_etalis(name: str) -> EtalisPolicy:
    for p in EtalisPolicy:
        if p.value == name.lower():
            return p
    raise ValueError(f"unknown ETALIS policy {name!r} (known: {', '.join(ETALIS_POLICIES)})")


@dataclass(eq=False)
class EpSparqlQuery:
    """A parsed EP-SPARQL query: SELECT (``template`` None) or CONSTRUCT (a rule)."""

    pattern: Node  # the WHERE pattern, Project included for SELECT
    select: tuple[str, ...]  # output variables (SELECT)
    template: tuple[TriplePattern, ...] | None = None
    policy: Selection | EtalisPolicy = Selection.UNRESTRICTED
    background: tuple[str, ...] = ()
    text: str = ""
    source: str | None = None
    name: str = ""
    ask: bool = False  # ASK: true at each complex event detected

    @property
    def construct(self) -> bool:
        return self.template is not None

    def with_policy(self, policy: str | Selection | EtalisPolicy) -> EpSparqlQuery:
        self.policy = parse_policy(policy)
        return self


POLICIES = ("unrestricted", "chronological", "recent", "etalis-chronological", "etalis-recent")


def parse_policy(p: str | Selection | EtalisPolicy) -> Selection | EtalisPolicy:
    """A Selection (000's policies), or an :class:`EtalisPolicy`."""
    if isinstance(p, EtalisPolicy):
        return p
    if isinstance(p, Selection):
        if p is Selection.NAIVE:
            raise ValueError("EP-SPARQL has the unrestricted, chronological and recent settings")
        return p
    if p.lower() in ETALIS_POLICIES:
        return parse_etalis(p)
    if p.lower() not in POLICIES:
        raise ValueError(f"unknown EP-SPARQL policy {p!r} (known: {', '.join(POLICIES)})")
    return Selection[p.upper()]
