"""Event pattern evaluation as 000 Sec. 4.2-4.4 writes it: the reference evaluator.

``evaluate(E, ...)`` is <<E>>^t_W. The active window W is always W^id nested
with interval windows W^[0, t3-1] (Eq. 7), so it is carried as an upper bound
``hi`` on item times. A substitution mu2(E1) is carried as ``subst``: a BEP
under a substitution yields its mappings compatible with it.

Readings of the formulas (each decided by Example 10; see docs/semantics.md):
- the order on time pairs is by end, then start;
- SEQ^n: LAST E2 over all mappings of E2; LAST E1 over the mappings of E1
  compatible with the chosen mu2 (C-SPARQL's per-binding timestamp());
- SEQ^c / SEQ^r: the "no earlier (later) mu2'" condition ranges over the
  mappings of E2 compatible with mu2;
- consumption removes the stream items (graphs) that justify an output
  (Example 11: "will consume G1, G2, and G3").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rsep.algebra.events import BasicEventPattern, EventPattern, First, Last, Selection, Seq
from rsep.algebra.mapping import SolutionMapping
from rsep.algebra.mapping import compatible as compatible  # re-exported for the evaluators
from rsep.algebra.mapping import merge as merge
from rsep.stream.event import Event
from rsep.stream.time import precedes

Mu = SolutionMapping[str]  # sorted (variable, N-Triples term) pairs


@dataclass(frozen=True, slots=True)
class EventMapping:
    """(mu, t1, t2), with the stream items that justify it (Appendix A)."""

    mu: Mu
    t1: int
    t2: int
    just: frozenset[int]  # item numbers (Event.seq)

    def as_dict(self) -> dict[str, str]:
        return dict(self.mu)


def first(ms: list[EventMapping]) -> list[EventMapping]:
    """Eq. (5): the mappings no other precedes. The order is total on (end, start), so
    they are the ones with the least key."""
    if not ms:
        return []
    k = min((m.t2, m.t1) for m in ms)
    return [m for m in ms if (m.t2, m.t1) == k]


def last(ms: list[EventMapping]) -> list[EventMapping]:
    """Eq. (6): the mappings no other follows."""
    if not ms:
        return []
    k = max((m.t2, m.t1) for m in ms)
    return [m for m in ms if (m.t2, m.t1) == k]


# A BEP's matches on one item: (BEP, item, triples of the item still available) -> mus
BepSolver = Callable[[BasicEventPattern, Event, tuple], list[Mu]]


@dataclass
class Context:
    """What a BEP reads: each window's items at t, and which items are still available."""

    contents: Mapping[str, Iterable[tuple[Event, tuple]]]  # window IRI -> (item, triples)
    solve: BepSolver
    consumed: frozenset[int] = frozenset()
    # An indexed source of a BEP's mappings (the production evaluator's), or None to
    # match every item of the window as Eq. (4) says.
    lookup: Callable[[BasicEventPattern, int | None, Mu], list[EventMapping]] | None = None


def evaluate(e: EventPattern, sel: Selection, ctx: Context, hi: int | None = None,
             subst: Mu = ()) -> list[EventMapping]:
    """<<E>>^t_W with W = W^[0, hi] (hi None: W^id), under the substitution ``subst``."""
    if isinstance(e, BasicEventPattern):
        if ctx.lookup is not None:
            return ctx.lookup(e, hi, subst)
        out = []
        for item, triples in ctx.contents.get(e.window, ()):
            if (hi is not None and item.end > hi) or item.start < 0 or item.seq in ctx.consumed:
                continue
            for mu in ctx.solve(e, item, triples):
                if not subst or compatible(mu, subst):
                    out.append(EventMapping(mu, item.start, item.end, frozenset((item.seq,))))
        return out
    if isinstance(e, First):
        return first(evaluate(e.expr, sel, ctx, hi, subst))
    if isinstance(e, Last):
        return last(evaluate(e.expr, sel, ctx, hi, subst))
    if isinstance(e, Seq):
        return _seq(e, sel, ctx, hi, subst)
    raise TypeError(f"not an event pattern: {e!r}")


def _before(hi: int | None, t3: int) -> int:
    return t3 - 1 if hi is None else min(hi, t3 - 1)


def _seq(e: Seq, sel: Selection, ctx: Context, hi: int | None, subst: Mu) -> list[EventMapping]:
    rights = evaluate(e.right, sel, ctx, hi, subst)
    out: list[EventMapping] = []
    if sel is Selection.UNRESTRICTED:  # Eq. (7)
        for m2 in rights:
            for m1 in evaluate(e.left, sel, ctx, _before(hi, m2.t1), merge(subst, m2.mu)):
                out.append(EventMapping(merge(m1.mu, m2.mu), m1.t1, m2.t2, m1.just | m2.just))
        return out
    if sel is Selection.NAIVE:  # Eq. (9)
        for m2 in last(rights):
            for m1 in last(evaluate(e.left, sel, ctx, hi, merge(subst, m2.mu))):
                if precedes((m1.t1, m1.t2), (m2.t1, m2.t2)):
                    out.append(EventMapping(merge(m1.mu, m2.mu), m1.t1, m2.t2, m1.just | m2.just))
        return out
    # Eq. (10) and (11)
    lefts = {id(m2): evaluate(e.left, sel, ctx, _before(hi, m2.t1), merge(subst, m2.mu)) for m2 in rights}
    usable = [m2 for m2 in rights if lefts[id(m2)]]
    chrono = sel is Selection.CHRONOLOGICAL
    for m2 in usable:
        rivals = [o for o in usable if o is not m2 and compatible(o.mu, m2.mu)]
        if chrono and any(precedes((o.t1, o.t2), (m2.t1, m2.t2)) for o in rivals):
            continue
        if not chrono and any(precedes((m2.t1, m2.t2), (o.t1, o.t2)) for o in rivals):
            continue
        pick = first(lefts[id(m2)]) if chrono else last(lefts[id(m2)])
        for m1 in pick:
            out.append(EventMapping(merge(m1.mu, m2.mu), m1.t1, m2.t2, m1.just | m2.just))
    return out


def justification(results: Iterable[EventMapping]) -> set[int]:
    """just(MATCH E, I, t): the items the outputs were built from (Appendix A)."""
    out: set[int] = set()
    for m in results:
        out |= m.just
    return out
