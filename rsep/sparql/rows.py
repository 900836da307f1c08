"""Solution rows handed to pyoxigraph with a query (FILTERs and SELECT expressions over
mappings that rsep computed itself).

A VALUES block carries them, except when a row holds a blank node, which VALUES cannot: then
the rows become a named graph of the store the query runs on, read back by a GRAPH pattern,
so isBlank, sameTerm, STR and EXISTS see the blank node itself. ``?__i`` numbers the rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyoxigraph as ox

ROWS = ox.NamedNode("urn:rsep:rows")
_VAR = "urn:rsep:var:"
_INT = "<http://www.w3.org/2001/XMLSchema#integer>"


@functools.lru_cache(maxsize=65536)
def to_term(t: str) -> ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple:
    """An N-Triples term as a pyoxigraph term."""
    if t.startswith("<"):
        return ox.NamedNode(t[1:-1])
    if t.startswith("_:"):
        return ox.BlankNode(t[2:])
    q = next(iter(ox.parse(f"<urn:s> <urn:p> {t} .", format=ox.RdfFormat.N_TRIPLES)))
    return q.object


@functools.lru_cache(maxsize=65536)
def stored_form(t: str) -> str:
    """The N-Triples form a store gives back for the term: pyoxigraph keeps numbers, booleans
    and dates in canonical form ("2.0"^^xsd:decimal reads back as "2")."""
    if not t.startswith('"'):
        return t
    st = ox.Store()
    st.add(ox.Quad(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), to_term(t)))
    return str(next(iter(st)).object)


@contextmanager
def rows_block(names: Sequence[str], rows: Sequence[dict[str, str]],
               store: ox.Store) -> Iterator[str]:
    """The group-pattern text that binds ``?__i`` and ``names`` to the rows' values (N-Triples
    terms; a missing name is unbound), valid while the context is open."""
    blank = any(v.startswith("_:") for r in rows for v in r.values())
    if not blank:
        lines = " ".join(f'("{i}"^^{_INT} ' + " ".join(r.get(n, "UNDEF") for n in names) + ")"
                         for i, r in enumerate(rows))
        yield "VALUES (?__i " + " ".join("?" + n for n in names) + ") { " + lines + " }"
        return
    quads = []
    for i, r in enumerate(rows):
        row = ox.NamedNode(f"{ROWS.value}:{i}")
        quads.append(ox.Quad(row, ox.NamedNode(_VAR + "__i"), ox.Literal(str(i), datatype=ox.NamedNode(_INT[1:-1])), ROWS))
        quads.extend(ox.Quad(row, ox.NamedNode(_VAR + n), to_term(v), ROWS)
                     for n, v in r.items() if n in names)
    store.extend(quads)
    try:
        opt = " ".join(f"OPTIONAL {{ ?__row <{_VAR}{n}> ?{n} }}" for n in names)
        yield f"GRAPH <{ROWS.value}> {{ ?__row <{_VAR}__i> ?__i {opt} }}"
    finally:
        store.remove_graph(ROWS)
