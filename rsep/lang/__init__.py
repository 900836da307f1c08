"""Surface languages: one thin module per dialect over the shared algebra."""

from __future__ import annotations

import re
from collections.abc import Callable

from rsep.algebra.query import ContinuousQuery, Query
from rsep.lang import cqels, csparql, rspql
from rsep.lang.common import extension_calls, validate_sparql
from rsep.lang.epsparql import parse_epsparql
from rsep.lang.errors import QueryError, position
from rsep.lang.parser import parse_tree
from rsep.lang.spaseq import parse_spaseq
from rsep.lang.syntax import DIALECT_NAMES, Syntax, start_of

# Dialects with a grammar of their own, recognised in the text before the shared parser
# runs, by a construct no RSP-QL query has: SPASEQ's DEFINE GPM (002), EP-SPARQL's operators
# between groups or its time functions (003 Sec. 4.1).
_OWN_GRAMMAR: tuple[tuple[str, re.Pattern[str], Callable[..., Query]], ...] = (
    ("spaseq", re.compile(r"\bDEFINE\s+GPM\b", re.I), parse_spaseq),
    ("epsparql", re.compile(r"}\s*(OPTIONALSEQ|EQUALSOPTIONAL|EQUALS|SEQ)\s*{|"
                            r"\bget(DURATION|STARTTIME|ENDTIME)\s*\(", re.I), parse_epsparql),
)

# Every dialect by name: the RSP dialects' builders over the shared parse tree; None for
# those with a grammar of their own.
DIALECTS: dict[str, Callable[[Syntax], ContinuousQuery] | None] = {
    "rspql": rspql.build, "csparql": csparql.build, "cqels": cqels.build,
    **{name: None for name, _, _ in _OWN_GRAMMAR}}


def parse_query(text: str, dialect: str | None = None, *,
                source: str | None = None) -> Query:
    """Parse a continuous query in any supported dialect (detected when not given).

    SPASEQ queries (``--dialect spaseq``, or text with ``DEFINE GPM``) give a
    :class:`rsep.algebra.spaseq.SpaseqQuery` (its runtime: :mod:`rsep.runtime.dialects`).
    """
    if dialect is not None and dialect not in DIALECTS:
        raise QueryError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    for name, marker, parse in _OWN_GRAMMAR:
        if dialect == name or (dialect is None and marker.search(text)):
            return parse(text, source=source)
    tree = parse_tree(text, source)
    syn = Syntax.of(text, tree, source)
    build = DIALECTS[syn.detect(dialect)]
    assert build is not None
    q = build(syn)
    validate_sparql(syn, q.sparql)
    calls = extension_calls(syn)
    q.unknown_functions = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "function"))
    q.unknown_aggregates = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "aggregate"))
    q.unknown_at = tuple((k, iri, *position(text, start_of(node))) for k, iri, node in calls)
    return q


__all__ = ["parse_query", "QueryError", "DIALECTS", "DIALECT_NAMES"]
