"""SPARQL solution mappings (SPARQL 1.1 Sec. 18.1.8; 000 Sec. 4, 002 Def. 5, 003 Sec. 4.2),
the one definition every language's evaluator builds on.

A mapping is immutable: its ``(variable, value)`` pairs sorted by variable, so that sets of
mappings can be hashed and compared. The value is whatever term representation the
evaluator keeps: pyoxigraph terms (SPASEQ), N-Triples strings (RSEP-QL's events,
EP-SPARQL, which compare and print them as text). Variable names are unique within a
mapping, so sorting never compares two values.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping as Dict
from typing import TypeVar

V = TypeVar("V")

# A solution mapping: (variable, value) pairs sorted by variable.
SolutionMapping = tuple[tuple[str, V], ...]

EMPTY: tuple = ()
UNIT: frozenset = frozenset({EMPTY})  # {mu_0}: the identity of the join


def mapping(d: Dict[str, V]) -> SolutionMapping[V]:
    """The mapping of a dict (variable -> value)."""
    return tuple(sorted(d.items()))


def compatible(a: SolutionMapping[V] | Dict[str, V], b: SolutionMapping[V] | Dict[str, V]) -> bool:
    """mu1 ~ mu2: they agree on their shared variables (either side a mapping or a dict)."""
    if not a or not b:
        return True
    db = dict(b) if isinstance(b, tuple) else b
    for k, v in (a if isinstance(a, tuple) else a.items()):
        w = db.get(k)
        if w is not None and w != v:
            return False
    return True


def merge(a: SolutionMapping[V], b: SolutionMapping[V]) -> SolutionMapping[V]:
    """mu1 u mu2 of two compatible mappings."""
    if not a:
        return b
    if not b:
        return a
    d = dict(a)
    d.update(b)
    return tuple(sorted(d.items()))


def join(x: frozenset[SolutionMapping[V]], y: frozenset[SolutionMapping[V]]
         ) -> frozenset[SolutionMapping[V]]:
    """Omega_1 join Omega_2: the merges of their compatible pairs."""
    if x == UNIT:
        return y
    if y == UNIT:
        return x
    out = []
    for a in x:
        da = dict(a)
        get = da.get
        for b in y:
            extra = False
            for k, v in b:
                w = get(k)
                if w is None:
                    extra = True
                elif w != v:
                    break
            else:
                if extra:
                    d = dict(da)
                    d.update(b)
                    out.append(tuple(sorted(d.items())))
                else:
                    out.append(a)
    return frozenset(out)


def project(x: frozenset[SolutionMapping[V]], variables: Iterable[str]
            ) -> frozenset[SolutionMapping[V]]:
    """pi_V(Omega): each mapping restricted to V."""
    keep = set(variables)
    return frozenset(tuple(kv for kv in m if kv[0] in keep) for m in x)


def drop(x: frozenset[SolutionMapping[V]], variables: frozenset[str]
         ) -> frozenset[SolutionMapping[V]]:
    """Each mapping without the given variables."""
    if not variables:
        return x
    return frozenset(tuple(kv for kv in m if kv[0] not in variables) for m in x)


def variables_of(x: Iterable[SolutionMapping[V]]) -> set[str]:
    return {k for m in x for k, _ in m}
