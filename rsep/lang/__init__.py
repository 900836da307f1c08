"""Surface languages: one thin module per dialect over the shared algebra."""

from __future__ import annotations

from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery
from rsep.lang import cqels, csparql, rspql
from rsep.lang.common import _extensions, validate_sparql
from rsep.lang.errors import QueryError
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import DIALECT_NAMES, Syntax

DIALECTS = {"rspql": rspql.build, "csparql": csparql.build, "cqels": cqels.build}


def parse_query(text: str, dialect: str | None = None, *, source: str | None = None) -> ContinuousQuery:
    """Parse a continuous query in any supported dialect (detected when not given)."""
    if dialect is not None and dialect not in DIALECTS:
        raise QueryError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    tree = parse_tree(text, source)
    syn = Syntax.of(text, tree, source)
    d = syn.detect(dialect)
    q = DIALECTS[d](syn)
    validate_sparql(syn, q.sparql)
    functions, aggregates = _extensions(syn)
    q.unknown_functions = tuple(f.value for f in functions if f.value != CSPARQL_TIMESTAMP)
    q.unknown_aggregates = tuple(a.value for a in aggregates)
    return q


__all__ = ["parse_query", "QueryError", "DIALECTS", "DIALECT_NAMES"]
