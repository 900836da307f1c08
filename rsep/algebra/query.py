"""A continuous query Q = (SE, SDS, ET, QF) of RSEP-QL Def. 5."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.events import MatchPattern
from rsep.algebra.policy import R2S, ReportPolicy

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.algebra.pattern import Query as PatternQuery
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
    (tests/algebra/test_pattern.py). Until the evaluators read the tree, both are kept.
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
    uses_timestamp: bool = False  # C-SPARQL timestamp() in the query
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
