"""A continuous query Q = (SE, SDS, ET, QF) of RSEP-QL Def. 5."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.events import MatchPattern
from rsep.algebra.expression import Expression, FunctionCall, walk
from rsep.algebra.modifiers import expressions
from rsep.algebra.pattern import Extend, Filter, LeftJoin, SubSelect, absolute, every_pattern
from rsep.algebra.pattern import Query as PatternQuery
from rsep.algebra.policy import R2S, ReportPolicy

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.algebra.spaseq import SpaseqQuery

# A parsed query of any dialect: the window algebra below, or a query with an automaton of
# its own (rsep.runtime.dialects finds its runtime).
Query: TypeAlias = "ContinuousQuery | SpaseqQuery | EpSparqlQuery"

CSPARQL_TIMESTAMP = "http://larkc.eu/csparql/sparql/jena/ext#timestamp"


@dataclass
class ContinuousQuery:
    """What every dialect parses into.

    ``sparql`` is the algebraic expression SE as SPARQL 1.1 text for pyoxigraph:
    WINDOW w P became GRAPH w P (Eq. 3: P over the snapshot of w), CQELS stream
    patterns became GRAPH over a window of their own, and the dataset clauses
    moved into ``dataset``.

    ``pattern`` is the same expression as a tree (rsep.algebra.pattern), read once from the
    parse; ``rsep.algebra.pattern.to_sparql(pattern)`` has the answers of ``sparql``
    (tests/algebra/test_pattern.py). The evaluators give pyoxigraph the tree written by
    to_sparql and decide by the tree; ``sparql`` is read only for a query with no tree.
    None with ``pattern_refused``: what the tree could not hold, and where (None without:
    a query made from text alone, as some tests make them).
    """

    name: str
    dialect: str
    form: str  # SELECT | CONSTRUCT | ASK | DESCRIBE
    dataset: StreamingDataset
    sparql: str
    r2s: R2S
    report: ReportPolicy
    text: str = ""
    variables: list[str] = field(default_factory=list)  # projected, in order (SELECT)
    # C-SPARQL timestamp() in the query, as the dialect read the text (the runtime asks
    # calls_timestamp, which reads the tree, and this only for a query with no tree)
    uses_timestamp: bool = False
    notes: list[str] = field(default_factory=list)
    service_at: tuple[int, int] | None = None  # SERVICE is parsed, then refused at registration
    matches: list[MatchPattern] = field(default_factory=list)  # MATCH patterns, by slot
    # SELECT vars WHERE { MATCH ... } and nothing else: the projection (() for *)
    match_projection: tuple[str, ...] | None = None
    # no solution whenever a MATCH has none (rsep.lang.rspql.events.empty_without_match)
    empty_without_match: bool = False
    # Extension functions and aggregates the query calls that neither pyoxigraph nor rsep
    # implements: parsed (rsep explain and compare read them), refused at registration.
    unknown_functions: tuple[str, ...] = ()
    unknown_aggregates: tuple[str, ...] = ()
    # each call: (kind "function" | "aggregate", IRI, line, column), in text order
    unknown_at: tuple[tuple[str, str, int, int], ...] = ()
    pattern: PatternQuery | None = None
    pattern_refused: str | None = None

    @property
    def calls_timestamp(self) -> bool:
        """Whether the query calls C-SPARQL's timestamp(), read from its tree: a call of
        that IRI in one of its expressions (the text can name the IRI where nothing calls
        it, in a string or a comment). For a query the tree does not hold, as before the
        tree: the dialect's flag, or the IRI anywhere in the text."""
        tree = self.pattern
        if tree is None:
            return self.uses_timestamp or CSPARQL_TIMESTAMP in self.sparql
        return any(isinstance(x, FunctionCall) and not isinstance(x.function, str)
                   and absolute(x.function, tree.prologue) == CSPARQL_TIMESTAMP
                   for e in _expressions(tree) for x in walk(e))


def _expressions(tree: PatternQuery) -> Iterator[Expression]:
    """Every expression of ``tree``: its solution modifiers', then its patterns' (FILTERs,
    OPTIONAL's conditions, BINDs, sub-queries' modifiers), those inside EXISTS included."""
    yield from expressions(tree.modifiers)
    for p in every_pattern(tree):
        if isinstance(p, Filter):
            yield from p.conditions
        elif isinstance(p, LeftJoin) and p.condition is not None:
            yield p.condition
        elif isinstance(p, Extend):
            yield p.expr
        elif isinstance(p, SubSelect):
            yield from expressions(p.modifiers)
