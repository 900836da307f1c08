"""GPMs compiled to Python: a basic graph pattern and FILTERs matched over one item's triples.

A SPARQL call costs ~40 us however small the graph, far more than matching a
handful of triple patterns against an event of a handful of triples. Group
patterns whose body is a plain BGP with FILTERs the FILTER compiler
(rsep.sparql.filters) takes are compiled here, SPASEQ's GPMs and RSEP-QL's BEPs
alike; anything else (OPTIONAL, UNION, GRAPH, functions, blank nodes in the
pattern, BASE) is left to pyoxigraph. The triple patterns come from the pattern
tree (rsep.algebra.pattern, read once by rsep.lang: the windows' blocks, SPASEQ's GPMs,
RSEP-QL's BEPs; rsep.sparql.pattern), the FILTERs' trees from the algebra.

Exactness against pyoxigraph: a FILTER that cannot be decided raises
:class:`Fallback` and the caller asks pyoxigraph for that row or item. Typed
literals are canonicalised as Oxigraph's store does (``"01"^^xsd:integer`` is
stored and returned as ``"1"``), so bindings are the same terms the store path
returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Constraint
from rsep.algebra.mapping import SolutionMapping
from rsep.sparql.filters import (
    DEC_CANON,
    DECIMAL,
    INTEGER,
    LANG,
    STRING,
    Fallback,
    NotCompiled,
    canonical_int,
    compile_expression,
    prefixes_of,
)
from rsep.sparql.filters import value_of as value_of  # re-exported: SPASEQ's NFA reads it here
from rsep.sparql.pattern import Triple, group_triples

if TYPE_CHECKING:  # a hint only: an RSP run (BEPs) never loads SPASEQ's algebra
    from rsep.algebra.spaseq import GPM

# solutions valued in pyoxigraph terms (SPASEQ's Def. 5 mappings are these)
Mapping = SolutionMapping[ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple]

__all__ = ["Canon", "CompiledGPM", "Fallback", "Indexed", "NotCompiled", "compile_bgp",
           "compile_gpm", "compile_pattern", "match_plan", "value_of"]

_LITERAL = ox.Literal
Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple


# ---------------------------------------------------------------- canonical terms (as stored)


class Canon:
    """Typed literals as Oxigraph's store returns them, cached per distinct literal."""

    def __init__(self) -> None:
        self._cache: dict[ox.Literal, Term] = {}
        self._store = ox.Store()
        self._g = ox.NamedNode("urn:rsep:canon")
        self._s = ox.NamedNode("urn:rsep:s")

    def term(self, t: object) -> object:
        if type(t) is not ox.Literal:
            return t
        got = self._cache.get(t)
        return got if got is not None else self._canonical(t)

    def _canonical(self, t: ox.Literal) -> Term:
        """A literal not in the cache: its canonical form, cached."""
        dt = t.datatype
        # integers first: a stream's literals are mostly numbers, and most are new
        got: Term
        if dt == INTEGER and canonical_int(t.value) or dt == STRING or dt == LANG \
                or dt == DECIMAL and DEC_CANON.match(t.value):
            got = t
        else:
            self._store.add(ox.Quad(self._s, self._s, t, self._g))
            got = next(iter(self._store.quads_for_pattern(None, None, None, self._g))).object
            self._store.remove_graph(self._g)
        if len(self._cache) > 200_000:  # distinct values of a long stream: stay bounded
            self._cache.clear()
        self._cache[t] = got
        return got

    def indexed(self, triples: tuple[ox.Triple, ...], preds: frozenset | None = None) -> Indexed:
        """An event's triples with canonical literals, indexed by predicate: this runs for
        every event. With ``preds`` (when every pattern's predicate is one of them), only
        those triples. Not de-duplicated (hashing every term costs more than matching): a
        repeated triple only repeats solutions, which the matchers read as a set."""
        cache = self._cache
        out: list[tuple[object, object, object]] = []
        by_pred: dict[object, list[tuple[object, object, object]]] = {}
        for t in triples:
            p = t.predicate
            if preds is not None and p not in preds:
                continue
            o = t.object
            if type(o) is _LITERAL:
                got = cache.get(o)
                o = got if got is not None else self._canonical(o)
            tr = (t.subject, p, o)
            out.append(tr)
            bucket = by_pred.get(p)
            if bucket is None:
                by_pred[p] = [tr]
            else:
                bucket.append(tr)
        return Indexed(out, by_pred)


# ---------------------------------------------------------------- compiled GPMs


class CompiledGPM:
    """A group pattern (BGP + FILTERs) matched on one item, and FILTERs on variables bound
    elsewhere (a GPM's stateful ones), as Python functions: a SPASEQ GPM's local pattern
    and an RSEP-QL BEP are the same thing."""

    def __init__(self, prologue: str, pattern: pt.Pattern | Sequence[Triple],
                 filters: Sequence[Constraint] | None,
                 stateful_filters: Sequence[Constraint], canon: Canon) -> None:
        prefixes = prefixes_of(prologue)
        written: int | None = None
        if isinstance(pattern, pt.Pattern):  # a group's tree (SPASEQ's GPMs, RSEP-QL's BEPs)
            pattern, written = group_triples(pattern, prefixes)
        # (triple patterns as rsep.sparql.pattern.triple_patterns gives them)
        term = canon.term
        self.triples = [(term(s), term(p), term(o)) for s, p, o in pattern]
        if not self.triples:
            raise NotCompiled("no triple pattern")
        if filters is None:  # the basic graph pattern alone: its FILTERs are the caller's
            filters = ()
        elif written is not None and written != len(filters):
            raise NotCompiled("the pattern's FILTERs are not the trees given")
        self.local_filters = [compile_expression(f.expr, prefixes, canon.term) for f in filters]
        filter_vars = frozenset().union(*(f.variables() for f in filters))
        self.stateful = [compile_expression(f.expr, prefixes, canon.term) for f in stateful_filters]
        # The BGP with its variables numbered by first occurrence: GPMs that differ only in
        # their variables' names (Queries 3 and 4's A, B, C ...) are matched once per event.
        names: list[str] = []
        shape = []
        for tp in self.triples:
            pos: list[object] = []  # a variable's number, or a constant term
            for x in tp:
                if isinstance(x, tuple):
                    if x[1] not in names:
                        names.append(x[1])
                    pos.append(names.index(x[1]))
                else:
                    pos.append(x)
            shape.append(tuple(pos))
        self.shape = tuple(shape)
        self.names = tuple(names)
        # blank nodes ([ ... ]) are matched like variables but bound in no mapping
        keep = [i for i, n in enumerate(names) if not n.startswith("_:")]
        self.perm = sorted(keep, key=lambda i: names[i])
        self.sorted_names = tuple(names[i] for i in self.perm)
        # What values() returns: the bound variables in order of first occurrence.
        self.bound = tuple(names[i] for i in keep)
        self._project = None if len(keep) == len(names) else \
            eval(f"lambda v: ({''.join(f'v[{i}], ' for i in keep)})")
        # A solution's mapping built by one generated expression: a generic loop (zip,
        # sorting) costs several times more and runs per GPM and event.
        body = ", ".join(f"(_n{k}, v[{i}])" for k, i in enumerate(self.perm))
        env = {f"_n{k}": n for k, n in enumerate(self.sorted_names)}
        # Only indices are spliced into the source; the names come in through env.
        self._build = eval(f"lambda v: ({body},)" if body else "lambda v: ()", env)
        # Events cache a shape's solutions under a small integer: a tuple of terms is
        # re-hashed at every lookup.
        self.shape_id = _SHAPE_IDS.setdefault(self.shape, len(_SHAPE_IDS))
        # (its plan kept here: looking it up by the shape hashes every term of it, per event)
        self.plan = _PLANS.get(self.shape) or _PLANS.setdefault(self.shape, _plan(self.shape))
        # Two GPMs with the same row_key have the same values() on every event (Queries 3
        # and 4's A, B, C ...): their rows are computed once per event.
        self.row_key = None if self.local_filters else (self.shape_id, tuple(keep))
        # The local FILTERs' verdict on a solution depends only on the values of the variables
        # they read (compiled FILTERs are pure functions of the row): it is looked up by those,
        # across events, instead of evaluated per event (a stream repeats its values).
        fkey = [i for i, n in enumerate(names) if n in filter_vars]
        self._fkey = itemgetter(*fkey) if fkey else _NO_KEY
        self.verdicts: dict[object, bool] = {}

    def _solutions(self, ev: Indexed) -> list[tuple]:
        """The BGP's solutions as value tuples (index = variable number), local FILTERs
        applied; the shape's part cached on the event for every GPM of that shape."""
        sols = ev.shapes.get(self.shape_id)
        if sols is None:
            sols = ev.shapes[self.shape_id] = _match_plan(self.plan, ev)
        if sols and self.local_filters:
            sols = self._passing(sols)
        return sols

    def _passing(self, sols: list[tuple]) -> list[tuple]:
        """The solutions the local FILTERs hold for, each verdict memoised by the values
        the FILTERs read (a Fallback is raised again each time, never memoised)."""
        memo = self.verdicts
        fkey = self._fkey
        out = []
        for vals in sols:
            key = fkey(vals)
            ok = memo.get(key)
            if ok is None:
                mu = dict(zip(self.names, vals, strict=True))
                ok = True
                for f in self.local_filters:
                    if f(mu) is not True:
                        ok = False
                        break
                if len(memo) >= VERDICTS_MAX:  # distinct values of a long stream: stay bounded
                    memo.clear()
                memo[key] = ok
            if ok:
                out.append(vals)
        return out

    def match(self, ev: Indexed) -> list[Mapping]:
        """The solutions of the BGP over the event's (canonical) triples, local FILTERs applied."""
        build = self._build
        return [build(vals) for vals in self._solutions(ev)]

    def values(self, ev: Indexed) -> list[tuple]:
        """The solutions as tuples of :attr:`bound` values (local FILTERs applied), distinct.
        Raises Fallback when a local FILTER cannot be decided here."""
        sols = self._solutions(ev)
        if sols and self._project is not None:
            # blank nodes are bound in no mapping: solutions that differ only there are one
            sols = list(dict.fromkeys(map(self._project, sols)))
        return sols

    def holds(self, mu: Mapping | dict) -> bool:
        d = mu if isinstance(mu, dict) else dict(mu)
        for f in self.stateful:
            if f(d) is not True:
                return False
        return True


def _no_key(vals: tuple) -> tuple:
    return ()


_NO_KEY = _no_key
# Memoised FILTER verdicts per compiled pattern, at most (then the memo starts again).
VERDICTS_MAX = 65_536


class Indexed:
    """An event's canonical triples by predicate, and the BGP shapes matched on it so far."""

    __slots__ = ("triples", "by_pred", "shapes", "by_term")

    def __init__(self, triples: list[tuple[object, object, object]],
                 by_pred: dict[object, list[tuple[object, object, object]]] | None = None
                 ) -> None:
        self.triples = triples
        if by_pred is None:
            by_pred = {}
            for tr in triples:
                got = by_pred.get(tr[1])
                if got is None:
                    by_pred[tr[1]] = [tr]
                else:
                    got.append(tr)
        self.by_pred = by_pred
        self.shapes: dict[int, list[tuple]] = {}
        # (predicate, position) -> term at that position -> triples, built on first use
        self.by_term: dict[tuple[object, int], dict[object, list]] | None = None

    def index(self, p: object, pos: int, cands: list) -> dict[object, list]:
        if self.by_term is None:
            self.by_term = {}
        idx = self.by_term.get((p, pos))
        if idx is None:
            idx = self.by_term[(p, pos)] = {}
            for tr in cands:
                got = idx.get(tr[pos])
                if got is None:
                    idx[tr[pos]] = [tr]
                else:
                    got.append(tr)
        return idx


_PLANS: dict[tuple, tuple] = {}
_SHAPE_IDS: dict[tuple, int] = {}


def _plan(shape: tuple) -> tuple:
    """Per triple pattern: (constant predicate | None, constant positions, positions whose
    variable an earlier position bound, positions that bind a variable, the (position,
    variable) to look the triples up by). Which variables are bound before a pattern is
    fixed by the order alone (a BGP has no OPTIONAL)."""
    nvars = 1 + max((x for tp in shape for x in tp if type(x) is int), default=-1)
    bound: set[int] = set()
    steps = []
    for tp in shape:
        before = set(bound)
        consts, checks, binds = [], [], []
        for pos, x in enumerate(tp):
            if type(x) is not int:
                consts.append((pos, x))
            elif x in bound:
                checks.append((pos, x))
            else:
                bound.add(x)
                binds.append((pos, x))
        p = tp[1] if type(tp[1]) is not int else None
        # a subject (else object) of a constant predicate bound by an earlier pattern
        key = next((c for c in checks if c[0] != 1 and c[1] in before), None) \
            if p is not None else None
        steps.append((p, tuple(c for c in consts if c[0] != 1 or p is None),
                      tuple(checks), tuple(binds), key))
    return nvars, tuple(steps)


# Below this many candidates a scan beats building an index: stream events are small.
INDEX_MIN = 16


def _match_shape(shape: tuple, ev: Indexed) -> list[tuple]:
    """Solutions of a numbered BGP as tuples of values (index = variable number)."""
    plan = _PLANS.get(shape)
    if plan is None:
        plan = _PLANS[shape] = _plan(shape)
    return _match_plan(plan, ev)


def _match_plan(plan: tuple, ev: Indexed) -> list[tuple]:
    """:func:`_match_shape` with the shape's plan given."""
    nvars, steps = plan
    sols: list[list] = [[None] * nvars]
    by_pred = ev.by_pred
    for p, consts, checks, binds, key in steps:
        cands = ev.triples if p is None else by_pred.get(p)
        if not cands:
            return []
        nxt = []
        # Joining on a bound term by scanning is quadratic in the event's size (SRBench's
        # events hold thousands of triples): look the term up instead.
        idx = ev.index(p, key[0], cands) if key is not None and len(cands) >= INDEX_MIN \
            else None
        for mu in sols:
            for tr in cands if idx is None else idx.get(mu[key[1]], ()):
                for pos, c in consts:
                    if tr[pos] != c:
                        break
                else:
                    if binds:
                        new = mu.copy()
                        for pos, x in binds:
                            new[x] = tr[pos]
                    else:
                        new = mu
                    for pos, x in checks:
                        if new[x] != tr[pos]:
                            break
                    else:
                        nxt.append(new)
        if not nxt:
            return []
        sols = nxt
    return [tuple(mu) for mu in sols]


def _match_shape_generic(shape: tuple, ev: Indexed) -> list[tuple]:
    """The unplanned matcher: the reference for :func:`_match_shape` in the tests."""
    nvars = 1 + max((x for tp in shape for x in tp if type(x) is int), default=-1)
    sols: list[list] = [[None] * nvars]
    for tp in shape:
        p = tp[1]
        cands = ev.triples if type(p) is int else ev.by_pred.get(p)
        if not cands:
            return []
        nxt = []
        for mu in sols:
            for tr in cands:
                new = None
                for x, v in zip(tp, tr, strict=True):
                    if type(x) is int:
                        cur = (new or mu)[x]
                        if cur is None:
                            if new is None:
                                new = mu.copy()
                            new[x] = v
                        elif cur != v:
                            break
                    elif x != v:
                        break
                else:
                    nxt.append(new if new is not None else mu)
        if not nxt:
            return []
        sols = nxt
    return [tuple(mu) for mu in sols]


def compile_gpm(gpm: GPM, canon: Canon) -> CompiledGPM | None:
    """The compiled form, or None when the GPM needs pyoxigraph."""
    if gpm.background or gpm.local_tree is None:
        return None
    return compile_pattern(gpm.prologue, gpm.local_tree, canon, gpm.local_filters,
                           gpm.stateful)


def compile_bgp(prologue: str, pattern: pt.Pattern | Sequence[Triple], canon: Canon
                ) -> CompiledGPM | None:
    """The basic graph pattern of a group ``{ triples . FILTER ... }`` as a tree (or its
    triple patterns, as :func:`rsep.sparql.pattern.triple_patterns` gives them), its FILTERs left
    out (the caller decides them), or None when it needs pyoxigraph. Its solutions over an
    event: ``match_plan(gpm.plan, ev)``, value tuples indexed as ``gpm.names``."""
    try:
        return CompiledGPM(prologue, pattern, None, (), canon)
    except (NotCompiled, Fallback, IndexError):
        return None


def match_plan(plan: tuple, ev: Indexed) -> list[tuple]:
    """The solutions of a compiled BGP (its ``plan``) over an event, in the matcher's order
    (by pattern, then by the event's triples), not de-duplicated."""
    return _match_plan(plan, ev)


def compile_pattern(prologue: str, pattern: pt.Pattern | Sequence[Triple], canon: Canon,
                    filters: Sequence[Constraint] = (),
                    stateful_filters: Sequence[Constraint] = ()) -> CompiledGPM | None:
    """A group graph pattern ``{ ... }`` as a tree (or its triple patterns, as
    :func:`rsep.sparql.pattern.triple_patterns` gives them) compiled, or None when it needs
    pyoxigraph. ``filters``: the trees of the FILTERs at its top level, in the order of the
    text."""
    try:
        return CompiledGPM(prologue, pattern, filters, stateful_filters, canon)
    except (NotCompiled, Fallback, IndexError):
        return None
