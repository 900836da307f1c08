"""Surface languages: one thin module per dialect over the shared algebra."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rsep.algebra.query import ContinuousQuery, Query
from rsep.lang import cqels, csparql, rspql
from rsep.lang.common import extension_calls, validate_sparql
from rsep.lang.errors import QueryError, position
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import DIALECT_NAMES, Syntax, start_of

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.algebra.spaseq import SpaseqQuery

_SPASEQ_MARKER = re.compile(r"\bDEFINE\s+GPM\b", re.I)
# EP-SPARQL: an operator between group graph patterns, or a time function (003 Sec. 4.1)
_EPSPARQL_MARKER = re.compile(r"}\s*(OPTIONALSEQ|EQUALSOPTIONAL|EQUALS|SEQ)\s*{|"
                              r"\bget(DURATION|STARTTIME|ENDTIME)\s*\(", re.I)


def _spaseq(syn: Syntax) -> SpaseqQuery:
    from rsep.lang.spaseq import parse_spaseq

    return parse_spaseq(syn.text, source=syn.source)


def _epsparql(syn: Syntax) -> EpSparqlQuery:
    from rsep.lang.epsparql import parse_epsparql

    return parse_epsparql(syn.text, source=syn.source)


# SPASEQ and EP-SPARQL have grammars of their own: parse_query hands them the text before
# the shared parser.
DIALECTS: dict[str, Callable[[Syntax], Query]] = {"rspql": rspql.build, "csparql": csparql.build, "cqels": cqels.build, "spaseq": _spaseq,
            "epsparql": _epsparql}


def parse_query(text: str, dialect: str | None = None, *,
                source: str | None = None) -> Query:
    """Parse a continuous query in any supported dialect (detected when not given).

    SPASEQ queries (``--dialect spaseq``, or text with ``DEFINE GPM``) give a
    :class:`rsep.algebra.spaseq.SpaseqQuery` (its runtime: :mod:`rsep.runtime.dialects`).
    """
    if dialect is not None and dialect not in DIALECTS:
        raise QueryError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    if dialect == "spaseq" or (dialect is None and _SPASEQ_MARKER.search(text)):
        from rsep.lang.spaseq import parse_spaseq

        return parse_spaseq(text, source=source)
    if dialect == "epsparql" or (dialect is None and _EPSPARQL_MARKER.search(text)):
        from rsep.lang.epsparql import parse_epsparql

        return parse_epsparql(text, source=source)
    tree = parse_tree(text, source)
    syn = Syntax.of(text, tree, source)
    d = syn.detect(dialect)
    q = DIALECTS[d](syn)
    # syn.detect finds RSP-QL, C-SPARQL or CQELS, whose syntax the shared parser reads
    assert isinstance(q, ContinuousQuery)
    validate_sparql(syn, q.sparql)
    calls = extension_calls(syn)
    q.unknown_functions = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "function"))
    q.unknown_aggregates = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "aggregate"))
    q.unknown_at = tuple((k, iri, *position(text, start_of(node))) for k, iri, node in calls)
    return q


__all__ = ["parse_query", "QueryError", "DIALECTS", "DIALECT_NAMES"]
