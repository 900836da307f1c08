"""Event patterns of RSEP-QL (000 Sec. 3.3): EVENT, FIRST, LAST, SEQ, and MATCH."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

from rsep.algebra.expression import Constraint
from rsep.algebra.pattern import Pattern, written
from rsep.algebra.selection import Selection


class EventPattern(ABC):
    """Base of the event pattern tree."""

    @abstractmethod
    def beps(self) -> list[BasicEventPattern]:
        """The basic event patterns at the leaves, left to right."""

    @property
    def variables(self) -> tuple[str, ...]:
        out: list[str] = []
        for b in self.beps():
            out.extend(v for v in b.variables if v not in out)
        return tuple(out)


@dataclass(frozen=True, eq=False)
class BasicEventPattern(EventPattern):
    """(EVENT w P): P evaluated on each stream item of window w (Eq. 4)."""

    name: str
    window: str
    pattern: str  # a SPARQL group graph pattern "{ ... }" (a BGP, optionally with FILTER)
    variables_: tuple[str, ...] = ()
    prologue: str = ""  # PREFIX / BASE declarations the pattern needs
    # the pattern's FILTERs, in the order of the text; None: not read (a BEP made by hand
    # from its text alone: pyoxigraph alone matches it; rsep.lang.rspql.events.event_pattern
    # reads one as a declared BEP is read)
    filters: tuple[Constraint, ...] | None = None
    # the pattern as a tree (rsep.algebra.pattern: a BGP, or its FILTERs over one), read once
    # by rsep.lang; None: a BEP made by hand from its text alone, or one the tree does not hold
    tree: Pattern | None = None

    def beps(self) -> list[BasicEventPattern]:
        return [self]

    @cached_property
    def sparql(self) -> str:
        """The group ``{ ... }`` pyoxigraph is given (after the prologue): the tree written
        once by to_sparql; the text where there is no tree, or to_sparql refuses it."""
        return written(self.tree, self.pattern)

    @property
    def variables(self) -> tuple[str, ...]:
        return self.variables_

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class First(EventPattern):
    expr: EventPattern

    def beps(self) -> list[BasicEventPattern]:
        return self.expr.beps()

    def __str__(self) -> str:
        return f"FIRST {self.expr}"


@dataclass(frozen=True, eq=False)
class Last(EventPattern):
    expr: EventPattern

    def beps(self) -> list[BasicEventPattern]:
        return self.expr.beps()

    def __str__(self) -> str:
        return f"LAST {self.expr}"


@dataclass(frozen=True, eq=False)
class Seq(EventPattern):
    left: EventPattern
    right: EventPattern

    def beps(self) -> list[BasicEventPattern]:
        return self.left.beps() + self.right.beps()

    def __str__(self) -> str:
        return f"({self.left} SEQ {self.right})"


@dataclass
class MatchPattern:
    """(MATCH E) inside WHERE; ``slot`` is the placeholder its solutions replace."""

    expr: EventPattern
    selection: Selection
    slot: str
    expose_interval: bool = False  # the query reads ?_from / ?_to


FROM_VAR = "_from"
TO_VAR = "_to"
