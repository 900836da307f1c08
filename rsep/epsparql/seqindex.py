"""Chronological / recent ``{tp1} SEQ {tp2} FILTER (...)``, evaluated from an index of its
live candidates (issues 25 and 51; the reasoning is in docs/semantics.md, "Indexed
selection").

With no window a query's occurrences stay visible until consumed, so the reference
evaluation of a part costs the product of its unconsumed lefts and rights at every instant
and grows with the stream; with one (a duration bound), the product of those in the window,
re-evaluated at every instant the part changes. Per part (the value of the partition
variable) this keeps:

- the live left solutions (``a``), in time order;
- the live right solutions grouped by mapping (``groups``: Eq. (10)/(11)'s rivals of a right
  solution are the compatible ones, i.e. those with its mapping), each in time order;
  a right solution is dropped for good once no live left one ends before it starts (no
  later left one can: occurrences come in time order);
- under chronological, the groups ordered by the numeric value a FILTER conjunct
  ``?r OP ?l + c`` compares (``values``), so the groups that may pass with the selected
  left solution are found by bisection;
- the groups whose selected pair may differ from the one last tested (``pending``): a pair
  that failed the FILTER fails again, and one that passed was output and consumed, so only
  those are tested unless the chronological left selection changed.

What the index cannot decide falls back to the reference evaluator, part by part: an
occurrence that is not a point, or that comes out of time order (a rule deriving one with a
past interval), makes its part evaluated by the reference from then on. Every pair the
index proposes is tested with the query's whole FILTER (the compiled fast path, else
pyoxigraph), so the index only has to propose a superset of the passing pairs.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter

from rsep.algebra import selection
from rsep.algebra.epsparql import (
    BGP,
    XSD,
    Expr,
    Filter,
    Mu,
    Node,
    Project,
    SeqJoin,
    TriplePattern,
    Var,
)
from rsep.algebra.events import Selection
from rsep.algebra.expression import Arithmetic, Compare, Expression, Iri, Variable, signed_literal
from rsep.epsparql.matcher import Occurrence, OnePattern, Solution, combine
from rsep.epsparql.operators import ExprEvaluator
from rsep.epsparql.rewrites import conjuncts
from rsep.sparql.filters import Fallback, nt_value

INF = float("inf")
# (tw, seq, solution): seq orders occurrences as the store holds them (the reference's order)
Entry = tuple[float, int, Solution]
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_NUM = re.compile(r"^[+-]?\d+(?:\.\d+)?$")  # an integer or decimal as written
_NUMBER_TYPES = frozenset(XSD + t for t in ("integer", "decimal"))


def _interval(e: Entry) -> tuple[float, float]:
    return (e[2].ta, e[2].tw)


def _rivals(x: Entry, y: Entry) -> bool:
    return x[2].mu == y[2].mu


def _by_predicate(sides: Iterable[tuple], at: int) -> dict[str, tuple] | None:
    """The sides (each with its OnePattern at index ``at``) by their triple pattern's
    constant predicate, so that an occurrence is matched only against the patterns of its
    predicate (the others would refuse it on that constant); None when a predicate is a
    variable."""
    out: dict[str, tuple] = {}
    for side in sides:
        pred = dict(side[at].consts).get(1)
        if pred is None:
            return None
        out[pred] = (*out.get(pred, ()), side)
    return out


def _position(tp: TriplePattern, var: str) -> int:
    """Where the partition variable stands in a triple pattern: a matching occurrence's
    term there is its part (read off the occurrence, not looked up in the solution)."""
    return next(i for i, t in enumerate(tp) if isinstance(t, Var) and t.name == var)


def _pair_order(ab: tuple[Entry, Entry]) -> tuple[int, int]:
    """The reference's order of a part's outputs: by the right solution, then the left."""
    return (ab[1][1], ab[0][1])


@dataclass(frozen=True)
class Shape:
    """The pattern the index runs: Project? Filter* (SeqJoin (tp_l) (tp_r))."""

    left: TriplePattern
    right: TriplePattern
    conds: tuple[Expr, ...]  # every FILTER, innermost first
    var: str  # the partition variable, the only one both sides bind
    cmp: tuple[str, str, str, float] | None  # (r var, op, l var, c): ?r OP ?l + c is a conjunct


def _names(tp: TriplePattern) -> set[str]:
    return {t.name for t in tp if isinstance(t, Var)}


def _offset(x: Expression) -> tuple[str, float] | None:
    """``?v``, ``?v + c`` or ``?v - c`` (c a number written bare) as (v, +-c)."""
    if isinstance(x, Variable):
        return x.name, 0.0
    if isinstance(x, Arithmetic) and x.op in ("+", "-") and isinstance(x.left, Variable):
        c = signed_literal(x.right)
        if c is not None and isinstance(c.datatype, Iri) and c.datatype.value in _NUMBER_TYPES \
                and _NUM.match(c.lexical):
            k = float(c.lexical)
            return x.left.name, -k if x.op == "-" else k
    return None


def _comparison(e: Expr, lvars: set[str], rvars: set[str]) -> tuple[str, str, str, float] | None:
    """A conjunct ``?x OP ?y (+|-) c`` (either way round) between a left-only and a right-only
    variable, as (right var, op, left var, c) meaning ?r OP ?l + c."""
    for c in conjuncts(e):
        t = c.tree
        if not isinstance(t, Compare) or t.op not in _FLIP:
            continue
        if isinstance(t.left, Variable) and (right := _offset(t.right)) is not None:
            x, op, (y, k) = t.left.name, t.op, right
        elif isinstance(t.right, Variable) and (left := _offset(t.left)) is not None \
                and not isinstance(t.left, Variable):  # ?y + c OP ?x: ?x FLIP(OP) ?y + c
            (y, k), op, x = left, _FLIP[t.op], t.right.name
        else:
            continue
        if x in rvars and y in lvars:
            return (x, op, y, k)
        if x in lvars and y in rvars:  # ?l OP ?r + k: ?r FLIP(OP) ?l - k
            return (y, _FLIP[op], x, -k)
    return None


def _under_filters(root: Node) -> tuple[Node, list[Expr]] | None:
    """What a query of an index's shape runs under its SELECT and FILTERs, and the FILTERs
    (outermost first); None for a DISTINCT one (a dropped duplicate is not consumed) or a
    FILTER that reads the history (EXISTS)."""
    n = root.arg if isinstance(root, Project) and not root.distinct else root
    if isinstance(n, Project):
        return None
    conds: list[Expr] = []
    while isinstance(n, Filter):
        if n.cond.reads:
            return None
        conds.append(n.cond)
        n = n.arg
    return n, conds


def shape_of(root: Node, var: str | None) -> Shape | None:
    """The query's Shape, or None when the index does not run it."""
    got = _under_filters(root)
    if got is None:
        return None
    n, conds = got
    if var is None or not isinstance(n, SeqJoin) or n.cond is not None:
        return None
    if not (isinstance(n.left, BGP) and isinstance(n.right, BGP)
            and len(n.left.patterns) == 1 and len(n.right.patterns) == 1):
        return None
    tl, tr = n.left.patterns[0], n.right.patterns[0]
    lv, rv = _names(tl), _names(tr)
    if any(v.startswith("_b") for v in lv | rv) or lv & rv != {var}:
        return None  # a blank node: two occurrences with one mapping; other join variables
    cmp = None
    for e in conds:
        cmp = cmp or _comparison(e, lv - rv, rv - lv)
    return Shape(tl, tr, tuple(reversed(conds)), var, cmp)


def _number(term: str | None) -> float | None:
    """A term's numeric value for the index, or None (not a number: always a candidate)."""
    if term is None:
        return None
    try:
        kind, v = nt_value(term)
    except Fallback:
        return None
    if kind not in ("n", "d", "f"):
        return None
    x = float(v)
    return None if math.isnan(x) else x


class _Part:
    """One part's live candidates (a C class in the compiled build: seqindex.pxd)."""

    def __init__(self) -> None:
        self.a: list[Entry] = []  # left solutions, time order: live from ah on
        self.ah = 0  # consumed at the head (chronological's case) only move this: no memmove
        self.groups: dict[Mu, list[Entry]] = {}  # live right ones, by mapping
        self.bq: deque[Entry] = deque()  # every right one, time order (lazy)
        self.values: list[tuple[float, int, Mu]] = []  # chronological
        self.other: set[Mu] = set()  # groups with no numeric value
        self.gkey: dict[Mu, tuple[float, int] | None] = {}
        self.pending: set[Mu] = set()
        self.last: tuple[int, ...] = ()  # chronological: the left selection last evaluated
        self.partner: dict[Mu, tuple[int, ...]] = {}  # recent
        self.partners: dict[int, set[Mu]] = {}  # recent: left seq -> groups
        self.maxtw: float = -INF
        self.nb = 0  # right solutions in groups (bq also holds consumed ones until compacted)


class CandidateIndex:
    """What the policy state (rsep.epsparql.policy) asks of an index of a query's live
    candidates: :class:`SeqIndex` and :class:`ChainIndex` are the two. (A C class in the
    compiled build, so that the policy state's calls, one or two an occurrence, are C calls.)"""

    def note(self, oc: Occurrence) -> list[str]:
        """Take an occurrence in; the parts whose content it changes."""
        raise NotImplementedError

    def evaluate(self, part: str, ex: ExprEvaluator, lo: float = -INF,
                 strict: bool = False) -> list[Solution]:
        """What the reference evaluator gives for the part now, the window starting at lo."""
        raise NotImplementedError

    def consume(self, items: Iterable[int]) -> None:
        """P^c / P^r: the items an output used are invisible from now on."""
        raise NotImplementedError

    def needs(self, oc: Occurrence) -> bool:
        """Whether the query can still use an unconsumed occurrence in its window (the
        store forgets the others)."""
        raise NotImplementedError


class SeqIndex(CandidateIndex):
    """The live candidates of a chronological / recent query of :class:`Shape`."""

    def __init__(self, shape: Shape, policy: Selection) -> None:
        self.shape = shape
        self.policy = policy
        self.chrono = policy is Selection.CHRONOLOGICAL
        self.parts: dict[str, _Part] = {}
        self.slow: set[str] = set()  # parts the reference evaluates
        self.by_item: dict[int, list[tuple[str, bool, Entry]]] = {}
        self.seq = 0
        self.tested = 0  # pairs tested (a measure of the work)
        # each side's matcher compiled once: this runs for every occurrence
        self.sides = ((False, OnePattern(shape.left), _position(shape.left, shape.var)),
                      (True, OnePattern(shape.right), _position(shape.right, shape.var)))
        self.by_p = _by_predicate(self.sides, 1)

    @staticmethod
    def of(root: Node, policy: Selection, var: str | None) -> SeqIndex | None:
        shape = shape_of(root, var)
        return SeqIndex(shape, policy) if shape is not None and policy.consumes else None

    def live(self) -> int:
        """Live candidates held (left solutions and right ones not yet dropped)."""
        return sum(len(p.a) - p.ah + sum(map(len, p.groups.values())) for p in self.parts.values())

    def indexed(self, part: str) -> bool:
        return part not in self.slow

    def needs(self, oc: Occurrence) -> bool:
        """Whether the query can still use an unconsumed occurrence: one the index holds (a
        live left or right candidate), or one of a part the reference evaluates. Every other
        one matches neither side, or is a right candidate no live left one ends before; with
        occurrences coming in the order of their ends no later left one can, and the index's
        equality with the reference shows it decides nothing (docs/semantics.md, "Indexed
        selection with no window")."""
        if oc.item in self.by_item:
            return True
        if self.slow:
            for _, side, _ in self.sides:
                for s in side.match([oc]):
                    if dict(s.mu)[self.shape.var] in self.slow:
                        return True
        return False

    # ------------------------------------------------------------ changes

    def note(self, oc: Occurrence) -> list[str]:
        """Take an occurrence in; the parts whose content it changes (those of the sides it
        matches: no other part's evaluation reads it)."""
        self.seq += 1
        keys: list[str] = []
        by_p = self.by_p
        for is_b, side, at in self.sides if by_p is None else by_p.get(oc.p, ()):
            for s in side.match([oc]):
                key = oc.s if at == 0 else oc.p if at == 1 else oc.o
                keys.append(key)
                if key in self.slow:
                    continue
                p = self.parts.get(key)
                if p is None:  # (not setdefault: a _Part is 15 fields to make)
                    p = self.parts[key] = _Part()
                if oc.ta != oc.tw or oc.tw < p.maxtw:
                    self.slow.add(key)  # an interval, or out of time order: the reference's
                    del self.parts[key]
                    continue
                p.maxtw = oc.tw
                e = (oc.tw, self.seq, s)
                self.by_item.setdefault(oc.item, []).append((key, is_b, e))
                if not is_b:
                    p.a.append(e)
                    continue
                p.bq.append(e)
                g = p.groups.get(s.mu)
                if g is None:
                    g = p.groups[s.mu] = []
                    self._index_group(p, s)
                if not self.chrono or not g:
                    p.pending.add(s.mu)  # the group's selected right solution changes
                g.append(e)
                p.nb += 1
        return keys

    def _index_group(self, p: _Part, s: Solution) -> None:
        x = _number(dict(s.mu).get(self.shape.cmp[0])) if self.shape.cmp else None
        if x is None:
            p.gkey[s.mu] = None
            p.other.add(s.mu)
        else:
            k = (x, self.seq)
            p.gkey[s.mu] = k
            insort(p.values, (x, self.seq, s.mu))

    def _drop_group(self, p: _Part, mu: Mu) -> None:
        del p.groups[mu]
        k = p.gkey.pop(mu)
        if k is None:
            p.other.discard(mu)
        else:
            i = bisect_left(p.values, k)
            del p.values[i]
        for s in p.partner.pop(mu, ()):
            p.partners.get(s, set()).discard(mu)
        p.pending.discard(mu)

    def consume(self, items: Iterable[int]) -> None:
        for item in items:
            for key, is_b, e in self.by_item.pop(item, ()):
                p = self.parts.get(key)
                if p is None:
                    continue
                if not is_b:
                    i = bisect_left(p.a, e[:2], lo=p.ah)
                    if i < len(p.a) and p.a[i][1] == e[1]:
                        if i == p.ah:
                            p.ah += 1
                            if p.ah > 64 and 2 * p.ah > len(p.a):
                                del p.a[:p.ah]
                                p.ah = 0
                        else:
                            del p.a[i]
                        p.pending |= p.partners.pop(e[1], set())
                    continue
                g = p.groups.get(e[2].mu)
                if g is None:
                    continue
                i = bisect_left(g, e[:2])
                if i < len(g) and g[i][1] == e[1]:
                    if i == (0 if self.chrono else len(g) - 1):
                        p.pending.add(e[2].mu)
                    del g[i]
                    p.nb -= 1
                    if not g:
                        self._drop_group(p, e[2].mu)
                    if len(p.bq) > 2 * p.nb + 64:  # consumed ones: bq stays within 2x the live
                        p.bq = deque(sorted([e for g in p.groups.values() for e in g],
                                            key=itemgetter(0, 1)))

    def keep_items(self, items: set[int]) -> None:
        for i in [i for i in self.by_item if i not in items]:
            del self.by_item[i]

    # ------------------------------------------------------------ evaluation

    def _drop_dead(self, p: _Part) -> None:
        """Right solutions no live left one ends before: none ever will."""
        thr = p.a[p.ah][0] if p.ah < len(p.a) else INF
        bq = p.bq
        while bq and bq[0][0] <= thr:
            e = bq.popleft()
            g = p.groups.get(e[2].mu)
            if g and g[0][1] == e[1]:
                del g[0]
                p.nb -= 1
                self._forget_entry(e)
                if not g:
                    self._drop_group(p, e[2].mu)
                elif self.chrono:
                    p.pending.add(e[2].mu)

    def _forget_entry(self, e: Entry) -> None:
        """A right solution dropped for good: its occurrence is no longer held for it."""
        for item in e[2].just:
            held = self.by_item.get(item)
            if held is not None:
                held[:] = [h for h in held if not (h[1] and h[2][1] == e[1])]
                if not held:
                    del self.by_item[item]

    def _expire(self, p: _Part, lo: float, strict: bool) -> None:
        """Left solutions that started before the window (``ta < lo``, or ``<=`` for a strict
        bound) are invisible from now on, as the reference's store hides them; they leave
        from the head (time order). Right ones need no test: a point right one out of the
        window ends before every left one in it, so the dead are dropped with them."""
        a, ah = p.a, p.ah
        while ah < len(a) and (a[ah][2].ta <= lo if strict else a[ah][2].ta < lo):
            if not self.chrono:  # a recent group paired with it pairs anew
                p.pending |= p.partners.pop(a[ah][1], set())
            ah += 1
        if ah != p.ah:
            p.ah = ah
            if ah > 64 and 2 * ah > len(a):
                del a[:ah]
                p.ah = 0

    def evaluate(self, part: str, ex: ExprEvaluator, lo: float = -INF,
                 strict: bool = False) -> list[Solution]:
        """What the reference evaluator gives for the part now (its order kept), the window
        starting at ``lo`` (:func:`rsep.epsparql.reference.window`; -inf: no window)."""
        p = self.parts.get(part)
        if p is None:
            return []
        if lo != -INF:
            self._expire(p, lo, strict)
        self._drop_dead(p)
        if p.ah == len(p.a) or not p.groups:
            p.pending.clear()
            return []
        pairs = self._chronological(p) if self.chrono else self._recent(p)
        p.pending.clear()
        if not pairs:
            return []
        if len(pairs) > 1:
            pairs.sort(key=_pair_order)
        combos = [combine(a[2], b[2]) for a, b in pairs]
        self.tested += len(combos)
        for e in self.shape.conds:
            keep = ex.test(e, [(c, c.ta, c.tw) for c in combos])
            combos = [c for c, k in zip(combos, keep, strict=True) if k]
        return combos

    def _chronological(self, p: _Part) -> list[tuple[Entry, Entry]]:
        # FIRST of the lefts: the earliest live ones (one instant); each group's selected
        # right one: its earliest usable, the front once the dead are dropped
        t0 = p.a[p.ah][0]
        a0 = selection.pick(self.policy, p.a[p.ah:bisect_right(p.a, (t0, INF), lo=p.ah)], _interval)
        sel = tuple([e[1] for e in a0])
        if sel == p.last:
            mus: Iterable[Mu] = p.pending
        else:
            p.last = sel
            mus = self._candidates(p, a0)
        out = []
        for mu in mus:
            g = p.groups.get(mu)
            if g is not None:
                for b in selection.select(self.policy, g[:1], _interval, _rivals):
                    for a in a0:
                        out.append((a, b))
        return out

    def _candidates(self, p: _Part, a0: list[Entry]) -> set[Mu]:
        cmp = self.shape.cmp
        if cmp is None:
            return set(p.groups)
        out = set(p.other)
        for a in a0:
            x = _number(dict(a[2].mu).get(cmp[2]))
            if x is None:
                return set(p.groups)
            t = x + cmp[3]
            eps = 1e-9 * max(1.0, abs(t))  # a superset: the FILTER decides exactly
            if cmp[1] in (">", ">="):
                lo = bisect_left(p.values, t - eps, key=itemgetter(0))
                out.update([v[2] for v in p.values[lo:]])
            else:
                hi = bisect_right(p.values, t + eps, key=itemgetter(0))
                out.update([v[2] for v in p.values[:hi]])
        return out

    def _recent(self, p: _Part) -> list[tuple[Entry, Entry]]:
        # each group's latest right one, with LAST of the lefts ending before it starts
        out: list[tuple[Entry, Entry]] = []
        for mu in p.pending:
            g = p.groups.get(mu)
            if not g:
                continue
            b = selection.select(self.policy, g[-1:], _interval, _rivals)[0]
            j = bisect_left(p.a, (b[0], -1), lo=p.ah)  # lefts ending before b (points: tw < ta)
            if j == p.ah:
                continue
            t = p.a[j - 1][0]
            a1 = selection.pick(self.policy, p.a[bisect_left(p.a, (t, -1), lo=p.ah):j], _interval)
            sel = tuple([e[1] for e in a1])
            old = p.partner.get(mu)
            if old is not None:
                for s in old:
                    p.partners.get(s, set()).discard(mu)
            p.partner[mu] = sel
            for s in sel:
                p.partners.setdefault(s, set()).add(mu)
            for a in a1:
                out.append((a, b))
        return out


# ---------------------------------------------------------------- chains of three and more


@dataclass(frozen=True)
class Chain:
    """The pattern :class:`ChainIndex` runs: Project? Filter* (tp_1 SEQ tp_2 SEQ ... SEQ tp_n),
    n >= 3, left-deep (SEQ is left-associative), each operand one triple pattern, the
    partition variable the only one two of them share."""

    patterns: tuple[TriplePattern, ...]
    conds: tuple[Expr, ...]  # every FILTER, innermost first


def chain_of(root: Node, var: str | None) -> Chain | None:
    """The query's Chain, or None when the chain index does not run it."""
    got = _under_filters(root)
    if got is None or var is None:
        return None
    n, conds = got
    tps: list[TriplePattern] = []
    while isinstance(n, SeqJoin) and n.cond is None:
        if not (isinstance(n.right, BGP) and len(n.right.patterns) == 1):
            return None
        tps.append(n.right.patterns[0])
        n = n.left
    if not (isinstance(n, BGP) and len(n.patterns) == 1) or len(tps) < 2:
        return None
    tps.append(n.patterns[0])
    tps.reverse()
    names = [_names(tp) for tp in tps]
    for i, a in enumerate(names):
        if any(v.startswith("_b") for v in a):
            return None  # a blank node: two occurrences with one mapping
        if any(a & b != {var} for b in names[i + 1:]):
            return None  # another join variable: rivals are no longer equal mappings
    return Chain(tuple(tps), tuple(reversed(conds)))


class ChainIndex(CandidateIndex):
    """A chronological / recent query of :class:`Chain`, evaluated part by part from the
    part's own visible occurrences, as the reference evaluates it (000 Eq. (10) / (11) at
    every SEQ, docs/semantics.md "Indexed selection"), without the reference's general
    machinery: per part and per operand, the live solutions in the store's order (the
    order the reference reads them in). Under a window (a duration bound) a part holds
    what is in the window, so an evaluation costs what the window holds, whatever the
    stream's length. Intervals and occurrences out of time order need nothing special:
    nothing here assumes points or order beyond the store's."""

    def __init__(self, chain: Chain, policy: Selection, var: str) -> None:
        self.chain = chain
        self.policy = policy
        self.var = var
        self.n = len(chain.patterns)
        # distinct patterns, each matched once per occurrence: (matcher, operands it is)
        by_tp: dict[TriplePattern, list[int]] = {}
        for j, tp in enumerate(chain.patterns):
            by_tp.setdefault(tp, []).append(j)
        self.sides = [(OnePattern(tp), tuple(js), _position(tp, var)) for tp, js in by_tp.items()]
        self.by_p = _by_predicate(self.sides, 0)
        self.parts: dict[str, list[list[Solution]]] = {}
        self.slow: frozenset[str] = frozenset()  # (SeqIndex's parts for the reference: none)
        self.by_item: dict[int, list[tuple[str, int, Solution]]] = {}
        self.tested = 0

    @staticmethod
    def of(root: Node, policy: Selection, var: str | None) -> ChainIndex | None:
        chain = chain_of(root, var)
        if chain is None or not policy.consumes:
            return None
        assert var is not None
        return ChainIndex(chain, policy, var)

    def live(self) -> int:
        return sum(len(x) for p in self.parts.values() for x in p)

    def indexed(self, part: str) -> bool:
        return True

    def needs(self, oc: Occurrence) -> bool:
        """(the store keeps each unconsumed occurrence in the window: the index holds its own)"""
        return oc.item in self.by_item

    def note(self, oc: Occurrence) -> list[str]:
        """Take an occurrence in; the parts whose content it changes."""
        keys: list[str] = []
        by_p = self.by_p
        for side, js, at in self.sides if by_p is None else by_p.get(oc.p, ()):
            for s in side.match([oc]):
                key = oc.s if at == 0 else oc.p if at == 1 else oc.o
                keys.append(key)
                p = self.parts.get(key)
                if p is None:
                    p = self.parts[key] = [[] for _ in range(self.n)]
                held = self.by_item.setdefault(oc.item, [])
                for j in js:
                    p[j].append(s)
                    held.append((key, j, s))
        return keys

    def _remove(self, items: Iterable[int]) -> None:
        for item in items:
            for key, j, s in self.by_item.pop(item, ()):
                p = self.parts.get(key)
                if p is None:
                    continue
                xs = p[j]
                for i, x in enumerate(xs):
                    if x is s:
                        del xs[i]
                        break
                if not any(p):
                    del self.parts[key]

    def consume(self, items: Iterable[int]) -> None:
        self._remove(items)

    def keep_items(self, items: set[int]) -> None:
        self._remove([i for i in self.by_item if i not in items])

    def evaluate(self, part: str, ex: ExprEvaluator, lo: float = -INF,
                 strict: bool = False) -> list[Solution]:
        """What the reference evaluator gives for the part now (its order kept), the window
        starting at ``lo`` (-inf: no window)."""
        p = self.parts.get(part)
        if p is None:
            return []
        if lo != -INF:  # started before the window: invisible from now on (lo only grows)
            gone = [s for xs in p for s in xs if (s.ta <= lo if strict else s.ta < lo)]
            if gone:
                self._remove({i for s in gone for i in s.just})
                p = self.parts.get(part)
                if p is None:
                    return []
        if not all(p):  # an operand with no solution
            return []
        sols = self._seq(p, self.n - 1, INF, {})
        self.tested += len(sols)
        for e in self.chain.conds:
            if not sols:
                break
            sols = ex.filter(e, sols)
        return sols

    def _seq(self, p: list[list[Solution]], j: int, hi: float,
             memo: dict[tuple[int, float], list[Solution]]) -> list[Solution]:
        """Operands 0..j under SEQ^c / SEQ^r up to ``hi``: reference._seq with its lefts
        as _lefts gives them (the left operand evaluated up to the right one's start)."""
        got = memo.get((j, hi))
        if got is not None:
            return got
        if j == 0:
            out = [s for s in p[0] if s.tw <= hi]
            memo[(j, hi)] = out
            return out
        lefts: list[tuple[Solution, list[Solution]]] = []
        for r in p[j]:
            if r.tw <= hi:
                ls = [x for x in self._seq(p, j - 1, min(hi, r.ta - 1), memo) if x.tw < r.ta]
                if ls:
                    lefts.append((r, ls))
        out = []
        if lefts:
            policy = self.policy
            chosen = {id(r) for r in selection.select(policy, [r for r, _ in lefts],
                                                      _interval2, _same)}
            for r, ls in lefts:
                if id(r) in chosen:
                    for x in selection.pick(policy, ls, _interval2):
                        out.append(combine(x, r))
        memo[(j, hi)] = out
        return out


def _interval2(s: Solution) -> tuple[float, float]:
    return (s.ta, s.tw)


def _same(a: Solution, b: Solution) -> bool:
    # operands of one SEQ bind the same variables: compatible means equal
    return a.mu == b.mu
