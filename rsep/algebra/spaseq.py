"""The SPASEQ algebra (002 Sec. 4-5): GPM expressions, sequence expressions, queries.

A query ``Q = (V, omega, SeqExp)`` (Def. 4) is a projection, a tumbling window
length and a sequence expression over GPM expressions ``(u, P)``. Sequence
expressions are kept flat, as Definition 4's grammar builds them: atoms joined
left to right by the three selection strategies. An atom is a binary-operator
expression (a GPM, or GPMs joined by ``&`` and ``|``), a Kleene+ GPM, or (the
extensions of 002 Appendix B) an optional or negated GPM.

Solution mappings are SPARQL's (rsep.algebra.mapping: sorted ``(variable, term)``
tuples), so sets of mappings (``Omega``) can be compared and hashed by both evaluators.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import Constraint
from rsep.algebra.mapping import EMPTY, SolutionMapping
from rsep.algebra.mapping import UNIT as mapping_unit

# re-exported: SPASEQ's evaluators take the mapping operations from their algebra
from rsep.algebra.mapping import compatible as compatible
from rsep.algebra.mapping import drop as drop
from rsep.algebra.mapping import join as join
from rsep.algebra.mapping import mapping as mapping
from rsep.algebra.mapping import merge as merge
from rsep.algebra.mapping import project as project
from rsep.algebra.mapping import variables_of as variables_of
from rsep.algebra.pattern import Pattern
from rsep.stream.time import Duration

# ---------------------------------------------------------------- mappings (Def. 5)

# Def. 5's mappings are SPARQL's (rsep.algebra.mapping), valued in pyoxigraph terms.
Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
Mapping = SolutionMapping[Term]  # sorted by variable name
Omega = frozenset[Mapping]

EMPTY_MAPPING: Mapping = EMPTY
UNIT: Omega = mapping_unit


# ---------------------------------------------------------------- selection strategies


class Strategy(Enum):
    """The event selection strategy between two atoms of a sequence (Sec. 4.2.2)."""

    STRICT = ","  # strict contiguity (Def. 12)
    NEXT = ";"  # skip-till-next (Def. 11)
    ANY = ":"  # skip-till-any (Def. 10)

    # Members are singletons compared by identity; Enum's own __hash__ hashes the name in
    # Python code, and the NFA hashes a strategy with every run it indexes.
    __hash__ = object.__hash__

    @property
    def rank(self) -> int:
        return {Strategy.STRICT: 0, Strategy.NEXT: 1, Strategy.ANY: 2}[self]

    @staticmethod
    def weaker(a: Strategy, b: Strategy) -> Strategy:
        """The less demanding of two strategies: what joins the neighbours of a skipped atom."""
        return a if a.rank >= b.rank else b


# ---------------------------------------------------------------- GPM expressions


@dataclass(frozen=True, eq=False)
class GPM:
    """A graph pattern matching expression ``(u, P)``, possibly with ``GRAPH <kb>`` (Def. 15).

    ``pattern`` is the SPARQL group graph pattern as written. FILTERs at its top
    level that use variables bound only by earlier GPMs (Query 1's
    ``FILTER(?fr2 < ?fr1)``) cannot be evaluated on the event alone: they are
    kept apart in ``stateful`` and ``local_pattern`` is the rest, whose top-level
    FILTERs are ``local_filters`` (in the order of the text).
    """

    name: str
    stream_name: str
    stream: str  # the stream IRI u
    pattern: str
    local_pattern: str
    stateful: tuple[Constraint, ...]
    variables: frozenset[str]  # variables the pattern can bind
    background: tuple[str, ...]  # IRIs of the GRAPH <kb> it reads
    prologue: str  # PREFIX / BASE declarations of the query
    line: int = 0
    column: int = 0
    filter_variables: frozenset[str] = frozenset()
    filter_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # var -> (line, column)
    # variables every solution binds (triple patterns of the top-level group and its GRAPH)
    required_variables: frozenset[str] = frozenset()
    local_filters: tuple[Constraint, ...] = ()
    # local_pattern as a tree (rsep.algebra.pattern), read once by rsep.lang; None where
    # the tree does not hold it (pyoxigraph matches the text)
    local_tree: Pattern | None = None

    @property
    def stateful_filters(self) -> tuple[str, ...]:
        """The stateful FILTERs' constraints as written (what pyoxigraph is given)."""
        return tuple(c.text for c in self.stateful)

    def __repr__(self) -> str:
        return f"GPM({self.name} ON {self.stream_name})"


class BopNode(ABC):
    """A binary-operator expression (Defs. 8, 9): a GPM, or ``&`` / ``|`` of such."""

    @abstractmethod
    def leaves(self) -> list[Leaf]:
        """The GPM leaves, left to right."""

    @abstractmethod
    def render(self) -> str:
        """The expression in SPASEQ syntax."""


@dataclass(frozen=True, eq=False)
class Leaf(BopNode):
    """One occurrence of a GPM in the sequence expression; ``key`` numbers occurrences."""

    gpm: GPM
    key: int

    def leaves(self) -> list[Leaf]:
        return [self]

    def render(self) -> str:
        return self.gpm.name

    @property
    def stream(self) -> str:
        return self.gpm.stream


@dataclass(frozen=True, eq=False)
class And(BopNode):
    items: tuple[BopNode, ...]

    def leaves(self) -> list[Leaf]:
        return [lf for it in self.items for lf in it.leaves()]

    def render(self) -> str:
        return " & ".join(_paren(i, Or) for i in self.items)


@dataclass(frozen=True, eq=False)
class Or(BopNode):
    items: tuple[BopNode, ...]

    def leaves(self) -> list[Leaf]:
        return [lf for it in self.items for lf in it.leaves()]

    def render(self) -> str:
        return " | ".join(i.render() for i in self.items)


def _paren(node: BopNode, kind: type) -> str:
    return f"({node.render()})" if isinstance(node, kind) else node.render()


class AtomKind(Enum):
    BOP = ""  # a GPM or a conjunction / disjunction of GPMs
    KLEENE = "+"  # Defs. 13, 14
    OPTIONAL = "?"  # Appendix B.0.2
    NEGATION = "!"  # Appendix B.0.1


@dataclass(frozen=True, eq=False)
class Atom:
    kind: AtomKind
    body: BopNode  # a Leaf for KLEENE, OPTIONAL and NEGATION
    index: int  # position in the sequence
    # Kleene+: the GPM's variables that no earlier GPM binds. Each iteration binds them
    # afresh (the last iteration is the visible one); the others are joined across
    # iterations. See docs/semantics.md, "Kleene+ bindings".
    local_vars: frozenset[str] = frozenset()

    @property
    def leaf(self) -> Leaf:
        assert isinstance(self.body, Leaf)
        return self.body

    def render(self) -> str:
        inner = self.body.render()
        if isinstance(self.body, (And, Or)) and len(self.body.items) > 1:
            inner = f"({inner})"
        return inner + self.kind.value


@dataclass(frozen=True, eq=False)
class Sequence:
    """``a1 op1 a2 op2 ... an``, read as ``((a1 op1 a2) op2 a3) ...`` (Def. 4)."""

    atoms: tuple[Atom, ...]
    ops: tuple[Strategy, ...]  # len(atoms) - 1

    def render(self) -> str:
        out = self.atoms[0].render()
        for op, a in zip(self.ops, self.atoms[1:], strict=True):
            out += f"{op.value} " + a.render() if op is not Strategy.STRICT else ", " + a.render()
        return out

    def leaves(self) -> list[Leaf]:
        return [lf for a in self.atoms for lf in a.body.leaves()]

    def variables(self) -> list[str]:
        """Every variable some GPM can bind, in order of first appearance."""
        out: list[str] = []
        for a in self.atoms:
            if a.kind is AtomKind.NEGATION:
                continue
            for lf in a.body.leaves():
                out.extend(v for v in sorted(lf.gpm.variables) if v not in out)
        return out


# ---------------------------------------------------------------- queries


@dataclass(eq=False)
class SpaseqQuery:
    """A SPASEQ SELECT query ``(V, omega, SeqExp)`` (Def. 4) with its streams and GPMs."""

    select: tuple[str, ...] | None  # None: SELECT *
    within: Duration | None  # the tumbling window length omega; None: one unbounded window
    streams: dict[str, str]  # stream name (S1) -> stream IRI
    gpms: dict[str, GPM]
    seq: Sequence
    distinct: bool = False
    partition_by: tuple[str, ...] = ()  # declared with PARTITION BY
    text: str = ""
    source: str | None = None
    name: str = ""
    # Def. 16's issue time t; None: the engine's start (its first event time)
    issued_at: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # SELECT (expr AS ?v): (v, expression text, its variables), in order; read with prologue
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()
    prologue: str = ""

    @property
    def variables(self) -> tuple[str, ...]:
        """The projection V."""
        return self.select if self.select is not None else tuple(self.seq.variables())

    @property
    def background(self) -> list[str]:
        out: list[str] = []
        for g in self.gpms.values():
            out.extend(b for b in g.background if b not in out)
        return out
