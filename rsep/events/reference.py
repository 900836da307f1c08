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

from rsep.algebra import selection
from rsep.algebra.events import BasicEventPattern, EventPattern, First, Last, Selection, Seq

# The event mappings both evaluators build (rsep.events.mappings); this module keeps the
# equations, the oracle the differential tests compare rsep.events.incremental with.
from rsep.events.mappings import (  # noqa: F401 - justification: read with the evaluator
    EventMapping,
    Mu,
    compatible,
    interval,
    justification,
    merge,
)
from rsep.stream.event import Event
from rsep.stream.time import precedes


def first(ms: list[EventMapping]) -> list[EventMapping]:
    """Eq. (5) (rsep.algebra.selection.first)."""
    return selection.first(ms, interval)


def last(ms: list[EventMapping]) -> list[EventMapping]:
    """Eq. (6) (rsep.algebra.selection.last)."""
    return selection.last(ms, interval)


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
    # Eq. (10) and (11), by 000's policies' one implementation
    lefts = {id(m2): evaluate(e.left, sel, ctx, _before(hi, m2.t1), merge(subst, m2.mu)) for m2 in rights}
    usable = [m2 for m2 in rights if lefts[id(m2)]]
    for m2 in selection.select(sel, usable, interval, _compatible):
        for m1 in selection.pick(sel, lefts[id(m2)], interval):
            out.append(EventMapping(merge(m1.mu, m2.mu), m1.t1, m2.t2, m1.just | m2.just))
    return out


def _compatible(a: EventMapping, b: EventMapping) -> bool:
    return compatible(a.mu, b.mu)
