"""Window functions exactly as RSEP-QL Def. 3 states them: the oracle.

Each function takes the whole stream (a list of events in arrival order) and
an evaluation time t, and returns the window's content W(S, t) as
(event, triples) pairs. Only events that have arrived by t (end <= t) exist.
An interval-stamped event is in a time window when its interval intersects the
window's interval (W3C RSP CG notes, 004).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyoxigraph import Triple

from rsep.algebra.window import Boundary, WindowKind
from rsep.stream.event import Event
from rsep.windows.resolved import Window

Content = list[tuple[Event, tuple[Triple, ...]]]


def intersects(e: Event, lo: int, hi: int, boundary: Boundary) -> bool:
    if boundary is Boundary.RIGHT_CLOSED:  # (lo, hi]
        return e.start <= hi and e.end > lo
    return e.start < hi and e.end >= lo  # [lo, hi)


def content(w: Window, stream: Sequence[Event], t: int) -> Content:
    arrived = [e for e in stream if e.end <= t]
    if w.kind is WindowKind.TIME:
        lo, hi = w.bounds(t)
        return [(e, e.triples) for e in arrived if intersects(e, lo, hi, w.boundary)]
    if w.kind is WindowKind.LANDMARK:
        hi = w.aligned(t) if w.stepped else t
        return [(e, e.triples) for e in arrived if e.end >= w.t0 and e.start <= hi]
    if w.kind is WindowKind.NOW:
        return [(e, e.triples) for e in arrived if e.start <= t <= e.end]
    if w.kind is WindowKind.UNBOUNDED:
        return [(e, e.triples) for e in arrived]
    if w.kind is WindowKind.COUNT:
        if not w.count_triples:
            return [(e, e.triples) for e in arrived[-w.count:]] if w.count else []
        out: Content = []
        left = w.count
        for e in reversed(arrived):
            if left <= 0:
                break
            take = e.triples[-left:] if len(e.triples) > left else e.triples
            out.append((e, take))
            left -= len(take)
        out.reverse()
        return out
    raise ValueError(f"unknown window kind {w.kind}")


def snapshot(w: Window, stream: Sequence[Event], t: int) -> set[Triple]:
    """SDS_w(t): the union of the graphs in the window (Sec. 4.1)."""
    return {tr for _, triples in content(w, stream, t) for tr in triples}


def nest_interval(c: Content, lo: int, hi: int) -> Content:
    """W^interval[(lo, hi)] applied to a window's content (the nesting of Def. 3)."""
    return [(e, tr) for e, tr in c if lo <= e.start and e.end <= hi]
