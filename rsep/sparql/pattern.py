"""A group pattern read for the matcher (rsep.sparql.matcher) from the pattern tree
(rsep.algebra.pattern, read once by rsep.lang): :func:`triple_patterns` gives a block's
triple patterns in the matcher's form, :func:`group_triples` those of a group that is a
BGP with its FILTERs (a SPASEQ GPM's local pattern, an RSEP-QL BEP).

The FILTERs are not read here: their trees come from the algebra (rsep.algebra.expression,
read by rsep.lang), in the order they stand in the text. Anything the matcher does not
take (OPTIONAL, UNION, GRAPH, sub-groups, property paths, relative IRIs ...) raises
NotCompiled: the pattern is left to pyoxigraph.
"""

from __future__ import annotations

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Iri, Literal, PrefixedName, Variable
from rsep.sparql.filters import NotCompiled

# A triple pattern: terms, and ("var", name) for variables and blank nodes
Triple = tuple[object, object, object]


# ---------------------------------------------------------------- from the tree


def group_triples(tree: pt.Pattern, prefixes: dict[str, str]) -> tuple[list[Triple], int]:
    """A group that is a BGP with its FILTERs (``{ triples . FILTER ... }``): its triple
    patterns in the matcher's form, and how many FILTERs it has; NotCompiled for any
    other group."""
    bgp, filters = tree, 0
    if isinstance(tree, pt.Filter):
        bgp, filters = tree.arg, len(tree.conditions)
    if not isinstance(bgp, pt.BGP):
        raise NotCompiled(f"{type(bgp).__name__} in the group")
    return triple_patterns(bgp.triples, prefixes), filters


def triple_patterns(triples: tuple[pt.Triple, ...], prefixes: dict[str, str]) -> list[Triple]:
    """Triple patterns of the tree in the matcher's form: a variable ``("var", name)``, a
    blank node ``("var", "_:<label>")`` (matched as a variable no mapping shows), a
    constant its pyoxigraph term (NotCompiled for a property path, a relative IRI, or a
    prefixed name with an escape or a percent sign in its local part)."""
    return [(_term(t.subject, prefixes), _term(t.predicate, prefixes), _term(t.object, prefixes))
            for t in triples]


def _term(t: pt.Term | pt.Path, prefixes: dict[str, str]) -> object:
    if isinstance(t, Variable):
        return ("var", t.name)
    if isinstance(t, pt.BlankNode):
        return ("var", "_:" + t.label)
    if isinstance(t, Literal):
        if t.language is not None:
            return ox.Literal(t.lexical, language=t.language)
        if t.datatype is None:
            return ox.Literal(t.lexical)
        return ox.Literal(t.lexical, datatype=_iri(t.datatype, prefixes))
    if isinstance(t, (Iri, PrefixedName)):
        return _iri(t, prefixes)
    raise NotCompiled("a property path")


def _iri(e: Iri | PrefixedName, prefixes: dict[str, str]) -> ox.NamedNode:
    if isinstance(e, Iri):
        if ":" not in e.value:
            raise NotCompiled("relative IRI")
        return ox.NamedNode(e.value)
    if e.prefix not in prefixes or "\\" in e.local or "%" in e.local:
        raise NotCompiled("prefixed name")
    return ox.NamedNode(prefixes[e.prefix] + e.local)
