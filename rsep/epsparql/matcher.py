"""EP-SPARQL's solutions (mu, t_alpha, t_omega) and the matcher of stream BGPs: triple
occurrences, indexed, matched one occurrence per triple pattern (003 Sec. 4.2's BGP(P))."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from sys import intern
from typing import TYPE_CHECKING

from rsep.algebra.epsparql import (
    INF,
    Mu,
    Term,
    TriplePattern,
    Var,
)
from rsep.algebra.mapping import compatible as compatible  # re-exported for the evaluators
from rsep.algebra.mapping import merge

if TYPE_CHECKING:
    from pyoxigraph import Triple

# ---------------------------------------------------------------- solutions


class Solution:
    """(mu, t_alpha, t_omega), with the occurrences (stream items) that justify it.
    Immutable by convention: a value (equal and hashed by its four fields), made several
    times per event, so a plain slotted class (a frozen dataclass's __init__ sets each
    field through object.__setattr__, 2-3x the cost); matcher.pxd makes it a C class."""

    __slots__ = ("mu", "ta", "tw", "just")

    def __init__(self, mu: Mu, ta: float, tw: float, just: frozenset[int] = frozenset()) -> None:
        self.mu = mu
        self.ta = ta
        self.tw = tw
        self.just = just

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Solution:
            return NotImplemented
        assert isinstance(other, Solution)
        return (self.mu, self.ta, self.tw, self.just) == (other.mu, other.ta, other.tw, other.just)

    def __hash__(self) -> int:
        return hash((self.mu, self.ta, self.tw, self.just))

    def __repr__(self) -> str:
        return f"Solution(mu={self.mu!r}, ta={self.ta!r}, tw={self.tw!r}, just={self.just!r})"

    def get(self, var: str) -> str | None:
        for k, v in self.mu:
            if k == var:
                return v
        return None

    @property
    def key(self) -> tuple:
        return (self.mu, self.ta, self.tw, self.just)


def combine(a: Solution, b: Solution) -> Solution:
    """(mu, ta, tw) join (mu', ta', tw') = (mu u mu', min(ta, ta'), max(tw, tw'))."""
    return Solution(merge(a.mu, b.mu), min(a.ta, b.ta), max(a.tw, b.tw), a.just | b.just)


TIMELESS = Solution((), INF, -INF)


# ---------------------------------------------------------------- occurrences, RDFS


_STRINGS: dict[object, tuple[str, str, str]] = {}
_STRINGS_MAX = 1 << 16


def strings(t: Triple) -> tuple[str, str, str]:
    """A stream triple's terms in N-Triples form, interned (the store holds each term once).
    Memoised per triple: streams repeat triples, and a hit (hashing the pyoxigraph triple)
    costs about an eighth of three str() calls; the memo is emptied when full."""
    got = _STRINGS.get(t)
    if got is None:
        if len(_STRINGS) >= _STRINGS_MAX:
            _STRINGS.clear()
        got = _STRINGS[t] = (intern(str(t.subject)), intern(str(t.predicate)), intern(str(t.object)))
    return got



class Occurrence:
    """A triple occurring over [ta, tw] (+inf, -inf: a background triple's, timeless), from
    stream item ``item`` (what consumption removes); ``seq``: the store's order of addition
    (set by OccurrenceStore.add). A plain slotted class, one made per triple of each event
    (matcher.pxd makes it a C class); equal by its fields."""

    __slots__ = ("s", "p", "o", "ta", "tw", "item", "seq")

    def __init__(self, s: str, p: str, o: str, ta: float, tw: float, item: int, seq: int = 0) -> None:
        self.s = s
        self.p = p
        self.o = o
        self.ta = ta
        self.tw = tw
        self.item = item
        self.seq = seq

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Occurrence:
            return NotImplemented
        assert isinstance(other, Occurrence)
        return (self.s, self.p, self.o, self.ta, self.tw, self.item, self.seq) == \
            (other.s, other.p, other.o, other.ta, other.tw, other.item, other.seq)

    def __repr__(self) -> str:
        return (f"Occurrence(s={self.s!r}, p={self.p!r}, o={self.o!r}, ta={self.ta!r}, tw={self.tw!r}, "
                f"item={self.item!r}, seq={self.seq!r})")


# The occurrences a triple pattern (s, p, o: a term, or None for a variable) may match.
Source = Callable[[str | None, str | None, str | None], Iterable[Occurrence]]


class OccurrenceStore:
    """Triple occurrences, indexed by predicate and by (predicate, object)."""

    def __len__(self) -> int:
        return len(self.all)

    def prune(self, keep: Callable[[Occurrence], bool]) -> None:
        """Keep only the occurrences ``keep`` accepts (indexes and keys rebuilt)."""
        old = self.all
        OccurrenceStore.__init__(self)
        for oc in old:
            if keep(oc):
                self.add(oc)

    def prune_kept(self, kept: list[Occurrence]) -> None:
        """prune(), keeping ``kept`` (a sublist of the store's occurrences, in its order)."""
        OccurrenceStore.__init__(self)
        for oc in kept:
            self.add(oc)

    def prune_before(self, lo: float) -> None:
        """prune(), keeping the occurrences that start at or after lo."""
        old = self.all
        OccurrenceStore.__init__(self)
        for oc in old:
            if oc.ta >= lo:
                self.add(oc)

    def __init__(self) -> None:
        self.all: list[Occurrence] = []
        self.by_p: dict[str, list[Occurrence]] = {}
        self.by_po: dict[tuple[str, str], list[Occurrence]] = {}
        self.by_ps: dict[tuple[str, str], list[Occurrence]] = {}
        self.keys: set[tuple] = set()
        self.indexed = getattr(self, "indexed", False)  # by_p, by_po, by_ps kept (kept by prune)
        self.version = getattr(self, "version", 0)  # counts additions (kept by prune)
        self.fresh: list[Occurrence] = []  # the occurrences ending at fresh_tau, the latest end
        self.fresh_tau: float = -INF

    def add(self, oc: Occurrence) -> bool:
        """Add an occurrence; S is a set (Sec. 4.2): an existing (s, p, o, t, t') is kept once.
        Occurrences come in order of their ends (the stream's time order)."""
        key = (oc.s, oc.p, oc.o, oc.ta, oc.tw)
        if key in self.keys:
            return False
        self.keys.add(key)
        self.version += 1
        oc.seq = self.version
        if oc.tw > self.fresh_tau:
            self.fresh, self.fresh_tau = [], oc.tw
        if oc.tw == self.fresh_tau:
            self.fresh.append(oc)
        self.all.append(oc)
        if self.indexed:
            self._index(oc)
        return True

    def _index(self, oc: Occurrence) -> None:
        self.by_p.setdefault(oc.p, []).append(oc)
        self.by_po.setdefault((oc.p, oc.o), []).append(oc)
        self.by_ps.setdefault((oc.p, oc.s), []).append(oc)

    def candidates(self, s: str | None, p: str | None, o: str | None) -> list[Occurrence]:
        if not self.indexed:
            # indexed on first use: a query of one-pattern BGPs reads only ``fresh``
            self.indexed = True
            for x in self.all:
                self._index(x)
        if p is not None:
            if o is not None:
                return self.by_po.get((p, o), [])
            if s is not None:
                return self.by_ps.get((p, s), [])
            return self.by_p.get(p, [])
        return self.all


def bind_term(t: Term, mu: dict[str, str]) -> str | None:
    if isinstance(t, Var):
        return mu.get(t.name)
    return t


def match_pattern(tp: TriplePattern, oc: tuple[str, str, str], mu: dict[str, str]) -> dict[str, str] | None:
    out = mu
    for t, v in zip(tp, oc, strict=True):
        if isinstance(t, Var):
            w = out.get(t.name)
            if w is None:
                if out is mu:
                    out = dict(mu)
                out[t.name] = v
            elif w != v:
                return None
        elif t != v:
            return None
    return out


def match_bgp(patterns: tuple[TriplePattern, ...], sources: Sequence[Source],
              given: dict[str, str] | None = None, first: int | None = None) -> list[Solution]:
    """BGP(P): one occurrence per triple pattern; t_alpha = min start, t_omega = max end.
    ``sources[i]`` gives the occurrences pattern i may use. ``first``: match that pattern
    first and then each pattern joined to those before it (the semi-naive term whose
    pattern reads only the current instant: its few occurrences bind the variables the
    others are looked up by, instead of a scan of every earlier occurrence of the first
    pattern); the solutions come in the same order as without it."""
    results: list[Solution] = []
    m = len(patterns)
    order = list(range(m)) if first is None else join_order(patterns, first)
    reordered = order != list(range(m))
    keys: list[tuple[int, ...]] = []  # reordered: each result's occurrences, in pattern order
    seqs = [0] * m

    def rec(k: int, mu: dict[str, str], ta: float, tw: float, just: frozenset[int]) -> None:
        if k == m:
            mu_out = tuple(sorted((x, v) for x, v in mu.items() if not x.startswith("_b")))
            results.append(Solution(mu_out, ta, tw, just))
            if reordered:
                keys.append(tuple(seqs))
            return
        i = order[k]
        tp = patterns[i]
        s, p, o = (bind_term(t, mu) for t in tp)
        for oc in sources[i](s, p, o):
            mm = match_pattern(tp, (oc.s, oc.p, oc.o), mu)
            if mm is not None:
                seqs[i] = oc.seq
                rec(k + 1, mm, min(ta, oc.ta), max(tw, oc.tw), just | {oc.item})

    rec(0, given or {}, INF, -INF, frozenset())
    if reordered:
        # every source lists occurrences in the order they were added: sorting by the
        # occurrences' order per pattern gives the in-order enumeration's result order
        results = [sol for _, sol in sorted(zip(keys, results, strict=True), key=lambda x: x[0])]
    return results


def join_order(patterns: tuple[TriplePattern, ...], first: int) -> list[int]:
    """``first``, then repeatedly the lowest-numbered pattern sharing a variable with those
    already placed (the lowest-numbered one left when none does)."""
    def names(tp: TriplePattern) -> set[str]:
        return {t.name for t in tp if isinstance(t, Var)}

    order, bound = [first], names(patterns[first])
    left = [i for i in range(len(patterns)) if i != first]
    while left:
        i = next((j for j in left if names(patterns[j]) & bound), left[0])
        left.remove(i)
        order.append(i)
        bound |= names(patterns[i])
    return order


class OnePattern:
    """BGP(P) of one triple pattern (match_bgp's fast path), its tests worked out once: the
    constants an occurrence must have, the positions a repeated variable must agree on, and
    the output variables in mu's order (sorted, blank-node variables left out)."""

    __slots__ = ("consts", "eqs", "outs")

    def __init__(self, tp: TriplePattern) -> None:
        first: dict[str, int] = {}
        self.consts: list[tuple[int, str]] = []
        self.eqs: list[tuple[int, int]] = []
        for i, t in enumerate(tp):
            if isinstance(t, Var):
                if t.name in first:
                    self.eqs.append((first[t.name], i))
                else:
                    first[t.name] = i
            else:
                self.consts.append((i, t))
        self.outs = sorted((k, i) for k, i in first.items() if not k.startswith("_b"))

    def match(self, occs: list[Occurrence]) -> list[Solution]:
        out = []
        for oc in occs:
            t = (oc.s, oc.p, oc.o)
            ok = True
            for i, v in self.consts:
                if t[i] != v:
                    ok = False
                    break
            if ok:
                for i, j in self.eqs:
                    if t[i] != t[j]:
                        ok = False
                        break
            if ok:
                out.append(Solution(tuple([(k, t[i]) for k, i in self.outs]), oc.ta, oc.tw,
                                    frozenset((oc.item,))))
        return out


def match_one(tp: TriplePattern, occs: list[Occurrence]) -> list[Solution]:
    """BGP(P) of one triple pattern over the given occurrences (match_bgp's fast path)."""
    return OnePattern(tp).match(occs)
