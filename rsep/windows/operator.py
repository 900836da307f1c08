"""Incremental window maintenance: W(S, t) kept up to date as t advances.

Each event enters and leaves a window once, so the cost per event is constant
(amortised, O(log n) for the eviction heap) whatever the stream's length, and
the state is the window's content plus the events that arrived but are not in
the window yet (offset windows, C-SPARQL's [o, c) at the closing instant).

``advance(t)`` returns what changed since the previous call, as triples added
and removed, each with the time of its event, which is what the SPARQL
snapshot store consumes.
"""

from __future__ import annotations

import heapq
from collections import deque

from pyoxigraph import Triple

from rsep.algebra.window import Boundary, WindowKind
from rsep.stream.event import Event
from rsep.windows.resolved import Window

Added = list[tuple[Triple, int]]
Removed = list[tuple[Triple, int]]


class WindowOperator:
    def __init__(self, w: Window) -> None:
        self.w = w
        self.version = 0  # bumps whenever the content changes
        self._pending: deque[Event] = deque()  # arrived, not yet inside
        self._live: dict[int, Event] = {}  # entry number -> event (time-based kinds)
        self._evict: list[tuple[int, int]] = []  # (end, entry number)
        self._entries = 0
        self._items: deque[tuple[Event, tuple[Triple, ...]]] = deque()  # count windows
        self._ntriples = 0
        self._live_triples = 0
        self._added: Added = []
        self._removed: Removed = []
        # the same changes by item, in order, for consumers that work on items (event
        # patterns); recorded only when one asks, so nothing piles up otherwise
        self.track_items = False
        # the triples that came and went (advance's result); a consumer that works on
        # items alone turns them off for time-based windows, saving a list per event
        self.track_triples = True
        self._changes: list[tuple[bool, Event, tuple[Triple, ...]]] = []
        # events with other named graphs (RDF Messages) that came and went: their graphs
        # go in and out of the store with them
        self._graph_changes: list[tuple[bool, Event]] = []
        self._kept = 0  # triples in the live events' other named graphs
        self._at: int | None = None  # time of the last advance
        self._unordered = False  # pending starts not in arrival order

    # ---------------------------------------------------------------- input

    def insert(self, e: Event) -> None:
        """An event arrived on the window's stream (events come in arrival order)."""
        w = self.w
        if w.kind is WindowKind.COUNT:
            self._items.append((e, e.triples))
            self._ntriples += len(e.triples)
            self._added.extend((tr, e.end) for tr in e.triples)
            if self.track_items:
                self._changes.append((True, e, e.triples))
            if e.graphs:
                self._graphs(True, e)
            self._trim()
            self.version += 1
            return
        if self._pending and e.start < self._pending[-1].start:
            self._unordered = True  # interval events can start before earlier arrivals
        self._pending.append(e)

    def _graphs(self, entered: bool, e: Event) -> None:
        self._graph_changes.append((entered, e))
        n = sum(len(ts) for _, ts in e.graphs)
        self._kept += n if entered else -n

    def _trim(self) -> None:
        w = self.w
        if not w.count_triples:
            while len(self._items) > w.count:
                e, triples = self._items.popleft()
                self._ntriples -= len(triples)
                self._removed.extend((tr, e.end) for tr in triples)
                if self.track_items:
                    self._changes.append((False, e, ()))
                if e.graphs:
                    self._graphs(False, e)
            return
        while self._ntriples > w.count:
            e, triples = self._items.popleft()
            excess = self._ntriples - w.count
            if self.track_items:
                self._changes.append((False, e, ()))
            if excess >= len(triples):
                self._ntriples -= len(triples)
                self._removed.extend((tr, e.end) for tr in triples)
                if e.graphs:
                    self._graphs(False, e)
            else:
                # the item stays with fewer triples: out, then in again as it now is
                self._removed.extend((tr, e.end) for tr in triples[:excess])
                self._items.appendleft((e, triples[excess:]))
                if self.track_items:
                    self._changes.append((True, e, triples[excess:]))
                self._ntriples -= excess
        # An event with no triples before the last n triples is out, as the triples before them.
        while self._items and not self._items[0][1] and self._ntriples >= w.count:
            e, _ = self._items.popleft()
            if self.track_items:
                self._changes.append((False, e, ()))
            if e.graphs:
                self._graphs(False, e)

    # ---------------------------------------------------------------- time

    def _limits(self, t: int) -> tuple[int | None, int, bool, bool]:
        """(lo, hi, lo_open, hi_closed) of the window at t; lo None: no lower bound."""
        w = self.w
        if w.kind is WindowKind.TIME:
            lo, hi = w.bounds(t)
            if w.boundary is Boundary.RIGHT_CLOSED:
                return lo, hi, True, True
            return lo, hi, False, False
        if w.kind is WindowKind.LANDMARK:
            return w.t0, (w.aligned(t) if w.stepped else t), False, True
        if w.kind is WindowKind.NOW:
            return t, t, False, True
        return None, t, False, True  # UNBOUNDED

    def advance(self, t: int) -> tuple[Added, Removed]:
        w = self.w
        self._at = t
        if w.kind is not WindowKind.COUNT:
            lo, hi, lo_open, hi_closed = self._limits(t)
            # (expired: lo is not None and end <= lo (lo_open) or end < lo; inside: start <= hi
            # (hi_closed) or start < hi; inline, as advance runs on every arrival)
            if lo is None:
                floor = None
            else:
                floor = lo + 1 if lo_open else lo  # an end below floor has expired
            ceil = hi + 1 if hi_closed else hi  # a start below ceil is inside
            landmark = w.kind is WindowKind.LANDMARK
            # (counters and lists in locals, stored once: advance runs every few arrivals)
            version = self.version
            track_triples, track_items = self.track_triples, self.track_items
            changes = self._changes
            pending: deque[Event] | None = self._pending
            if pending and not self._unordered and pending[0].start >= ceil and (
                    floor is None or pending[0].end >= floor):
                # Starts and ends in order, and the first neither enters nor has expired:
                # no later one can. Skipped, not scanned: events sharing a timestamp ahead
                # of the window (STEP < RANGE) were rescanned at every arrival, quadratic
                # (10^4 of them: 55 s)
                pending = None
            if pending:
                keep: deque[Event] = deque()
                live, evict, entries = self._live, self._evict, self._entries
                live_triples = self._live_triples
                added = self._added
                for e in self._pending:
                    end = e.end
                    if end > t:
                        keep.append(e)
                    elif floor is not None and end < floor:
                        continue  # passed by without ever being inside
                    elif e.start < ceil:
                        triples = e.triples
                        live_triples += len(triples)
                        if not landmark:  # (nothing leaves a landmark window)
                            entries += 1
                            live[entries] = e
                            heapq.heappush(evict, (end, entries))
                        if track_triples:
                            added.extend((tr, end) for tr in triples)
                        if track_items:
                            changes.append((True, e, triples))
                        if e.graphs:
                            self._graphs(True, e)
                        version += 1
                    else:
                        keep.append(e)
                self._entries, self._live_triples = entries, live_triples
                self._pending = keep
                self._unordered = len(keep) > 1 and any(
                    a.start > b.start for a, b in zip(keep, list(keep)[1:], strict=False))
            evict = self._evict
            if floor is not None and evict and evict[0][0] < floor:
                live = self._live
                removed = self._removed
                live_triples = self._live_triples
                while evict and evict[0][0] < floor:
                    _, n = heapq.heappop(evict)
                    e = live.pop(n)
                    triples = e.triples
                    live_triples -= len(triples)
                    if track_triples:
                        end = e.end
                        removed.extend((tr, end) for tr in triples)
                    if track_items:
                        changes.append((False, e, ()))
                    if e.graphs:
                        self._graphs(False, e)
                    version += 1
                self._live_triples = live_triples
            self.version = version
        added, removed = self._added, self._removed
        self._added, self._removed = [], []
        return added, removed

    # ---------------------------------------------------------------- queries

    def take_item_changes(self) -> list[tuple[bool, Event, tuple[Triple, ...]]]:
        """(entered?, item, its triples) since the last call, in order of occurrence."""
        out, self._changes = self._changes, []
        return out

    def take_graph_changes(self) -> list[tuple[bool, Event]]:
        """(entered?, event) since the last call for the events with other named graphs."""
        out = self._graph_changes
        if out:  # (advance's hot path allocates nothing when no event has other graphs)
            self._graph_changes = []
        return out

    def waiting_end(self) -> int | None:
        """The least end of the events waiting to enter (they wait in arrival order, which
        is the order of their ends), or None."""
        return self._pending[0].end if self._pending else None

    @property
    def empty(self) -> bool:
        """No triple inside: events with no triples (heartbeats) leave the content empty."""
        if self._kept:
            return False
        if self.w.kind is WindowKind.COUNT:
            return not self._ntriples
        return not self._live_triples

    @property
    def idle(self) -> bool:
        """Empty and with nothing waiting to enter: stays empty until the next arrival."""
        return self.empty and not self._pending

    def size(self) -> int:
        if self.w.kind is WindowKind.COUNT:
            return self._ntriples
        return self._live_triples

    def next_change(self) -> int | None:
        """The first time after the last advance at which the content changes without
        new arrivals (already past, if arrivals since then have changed it)."""
        w = self.w
        after = self._at if self._at is not None else -(1 << 62)
        if w.kind is not WindowKind.TIME:
            if w.kind is WindowKind.NOW and self._live:
                return max(after + 1, min(e.end for e in self._live.values()) + 1)
            if w.kind is WindowKind.LANDMARK and self._pending:
                return self._first_aligned(min(e.start for e in self._pending), after, 0, True)
            return None
        cands: list[int] = []
        right = w.boundary is Boundary.RIGHT_CLOSED
        if self._evict:
            # leaves at the first aligned t' with t' - alpha >= end (right-closed) or > end
            cands.append(self._first_aligned(self._evict[0][0], after, w.alpha, right))
        if self._pending:
            # enters at the first aligned t' with t' - offset >= start (right) or > start;
            # that instant grows with the start, so the earliest pending start decides
            first = min(e.start for e in self._pending) if self._unordered else self._pending[0].start
            cands.append(self._first_aligned(first, after, w.offset, right))
        return min(cands) if cands else None

    def _first_aligned(self, x: int, after: int, shift: int, inclusive: bool) -> int:
        b = self.w.beta
        o = self.w.origin
        target = x + shift if inclusive else x + shift + 1
        t = o - (-(target - o) // b) * b
        if t <= after:
            t = o + ((after - o) // b + 1) * b
        return t
