"""Surface languages: one thin module per dialect over the shared algebra; the registry of
dialects is :mod:`rsep.lang.dialect`."""

from __future__ import annotations

from rsep.algebra.query import Query
from rsep.lang.common import extension_calls, validate_sparql
from rsep.lang.dialect import DIALECTS, Dialect, apply_option, dialect_of, get_dialect
from rsep.lang.errors import QueryError, position
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import DIALECT_NAMES, Syntax, start_of


def parse_query(text: str, dialect: str | None = None, *,
                source: str | None = None) -> Query:
    """Parse a continuous query in any supported dialect (detected when not given).

    SPASEQ queries (``--dialect spaseq``, or text with ``DEFINE GPM``) give a
    :class:`rsep.algebra.spaseq.SpaseqQuery` (its runtime: :mod:`rsep.runtime.dialects`).
    """
    try:
        return _parse_query(text, dialect, source)
    except RecursionError:
        # (the bounds, rsep.lang.bounds, keep a query within rsep run's recursion limit; a
        # caller with Python's default one may still meet this: refused, not a traceback)
        raise QueryError("the query is nested too deeply to be analysed here (rsep run "
                         "takes it; or lower its nesting)", source=source) from None


def _parse_query(text: str, dialect: str | None, source: str | None) -> Query:
    forced = get_dialect(dialect) if dialect is not None else None
    # the dialects with a grammar of their own are recognised in the text before the shared
    # parser runs
    for d in DIALECTS.values():
        if d.parser is not None and (forced is d or (forced is None and d.marker is not None
                                                     and d.marker.search(text))):
            parse = d.parse
            assert parse is not None
            return parse(text, source=source)
    tree = parse_tree(text, source)
    syn = Syntax.of(text, tree, source)
    build = DIALECTS[syn.detect(dialect)].build
    assert build is not None
    q = build(syn)
    validate_sparql(syn, q.sparql)
    calls = extension_calls(syn)
    q.unknown_functions = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "function"))
    q.unknown_aggregates = tuple(dict.fromkeys(iri for k, iri, _ in calls if k == "aggregate"))
    q.unknown_at = tuple((k, iri, *position(text, start_of(node))) for k, iri, node in calls)
    return q


__all__ = ["parse_query", "QueryError", "DIALECTS", "DIALECT_NAMES", "Dialect", "apply_option",
           "dialect_of", "get_dialect"]
