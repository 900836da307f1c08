"""The production evaluator of a MATCH: state kept across evaluations.

Each BEP's mappings are computed once per stream item, when the item enters the
BEP's window, and dropped when it leaves. For UNRESTRICTED sequences without
FIRST/LAST (Eq. 7 only) the matches themselves are maintained: an evaluation
joins only the new mappings with the live ones (a delta join, each new match
found once) and drops the matches whose items left a window, so its cost
follows the change, not the window. The non-monotonic operators (FIRST, LAST,
SEQ^n, SEQ^c, SEQ^r and consumption) are recomputed at each evaluation from
the live mappings, through the reference equations, without any SPARQL call.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from rsep.algebra import selection
from rsep.algebra.events import (
    BasicEventPattern,
    EventPattern,
    First,
    Last,
    MatchPattern,
    Selection,
    Seq,
)
from rsep.events import reference as events_reference  # (evaluate, Context: see below)
from rsep.events.mappings import EventMapping, Mu, compatible, interval, merge
from rsep.events.solver import BatchSolver
from rsep.stream.event import Event


def _remove(sorted_entries: list, entry: tuple) -> None:
    """Remove an entry from a list sorted by (start, id) in O(log n) + a memmove."""
    i = bisect_left(sorted_entries, entry[:2])
    while sorted_entries[i][1] != entry[1]:
        i += 1
    del sorted_entries[i]


def _compatible(a: EventMapping, b: EventMapping) -> bool:
    return compatible(a.mu, b.mu)


def _pure_sequence(e: EventPattern) -> bool:
    if isinstance(e, (First, Last)):
        return False
    if isinstance(e, Seq):
        return _pure_sequence(e.left) and _pure_sequence(e.right)
    return True


def _constraints(e: EventPattern, start: int = 0) -> tuple[int, list[tuple[int, int, int]]]:
    """Leaves in order and, for each SEQ node, (a, m, b): leaves [a, m) must end before leaf m starts."""
    if isinstance(e, Seq):
        n_left, c_left = _constraints(e.left, start)
        n_right, c_right = _constraints(e.right, start + n_left)
        return n_left + n_right, c_left + c_right + [(start, start + n_left, start + n_left + n_right)]
    return 1, []


class IncrementalMatcher:
    def __init__(self, match: MatchPattern, solver: BatchSolver) -> None:
        self.match = match
        self.solver = solver
        self.leaves: list[BasicEventPattern] = match.expr.beps()
        self.delta = match.selection is Selection.UNRESTRICTED and _pure_sequence(match.expr)
        _, cons = _constraints(match.expr)
        # for leaf m: the leaves [a, m) that must end before it starts
        self._before: dict[int, list[int]] = {}
        for a, m, _b in cons:
            self._before.setdefault(m, []).extend(range(a, m))
        self._items: dict[int, dict[int, tuple[Event, tuple]]] = {i: {} for i in range(len(self.leaves))}
        self._maps: dict[int, list[tuple[int, int, EventMapping]]] = {i: [] for i in range(len(self.leaves))}
        # leaf j's mappings by the values of some of its variables, one index per variable set
        # asked for (built on first use, then maintained)
        self._index: list[dict[tuple[str, ...], dict[tuple, list]]] = [{} for _ in self.leaves]
        self._entries_of: list[dict[int, list]] = [{} for _ in self.leaves]  # item -> its entries
        self._results: dict[tuple[int, ...], EventMapping] = {}
        self._by_item: dict[int, set[tuple[int, ...]]] = {}
        self._ids = 0
        # matches new at / dropped by the last evaluation (delta mode)
        self.added: list[EventMapping] = []
        self.removed: list[EventMapping] = []
        # SEQ^c / SEQ^r of two BEPs (E_1 SEQ E_2): what Eq. (10)/(11) can never use again is
        # set aside (``_off``: leaf -> item -> its entries): consumed items, and right
        # mappings no unconsumed left one ends before (dead while items come in time
        # order; ``_dead_t1``: the latest start set aside as dead, to bring them back if a
        # left one ending earlier comes). Evaluations then read live candidates only.
        e = match.expr
        self._trim = (match.selection in (Selection.CHRONOLOGICAL, Selection.RECENT)
                      and isinstance(e, Seq) and isinstance(e.left, BasicEventPattern)
                      and isinstance(e.right, BasicEventPattern) and e.left is not e.right)
        self._off: list[dict[int, list]] = [{} for _ in self.leaves]
        self._dead: set[int] = set()  # items of leaf 1 set aside as dead (not consumed)
        self._dead_t1 = -(1 << 62)
        # Set by the runtime when every item enters its windows once and no later item can
        # end before the ``floor`` evaluate() is given (rsep.runtime.windowed): consumed
        # items and dead right ones that started by the floor are then dropped, not set
        # aside, so a landmark window's state is its live candidates.
        self.forget = False
        # the longest interval among each leaf's items: bounds how far a scan in start
        # order must go (0 for point events: the first candidate decides)
        self._span = [0] * len(self.leaves)

    # ------------------------------------------------------------------ state

    def _sync(self, changes: Mapping[str, list[tuple[bool, Event, tuple]]]) -> list[tuple[int, int, EventMapping]]:
        """Apply the windows' item changes to each leaf; returns the new (leaf, id, mapping)."""
        new: list[tuple[int, int, EventMapping]] = []
        for i, bep in enumerate(self.leaves):
            known = self._items[i]
            gone: set[int] = set()
            fresh: dict[int, tuple[Event, tuple]] = {}
            for entered, e, trs in changes.get(bep.window, ()):
                if entered:
                    fresh[e.seq] = (e, trs)
                    gone.discard(e.seq)
                else:
                    fresh.pop(e.seq, None)
                    if e.seq in known:
                        gone.add(e.seq)
            # an item that left and came back with fewer triples (count windows) is new
            gone |= {s for s in fresh if s in known}
            for s in gone:
                del known[s]
                for key in self._by_item.pop(s, ()):
                    gone_match = self._results.pop(key, None)
                    if gone_match is not None:
                        self.removed.append(gone_match)
                self._off[i].pop(s, None)
                self._dead.discard(s)
                for entry in self._entries_of[i].pop(s, ()):
                    _remove(self._maps[i], entry)
                    d = dict(entry[2].mu)
                    for names, index in self._index[i].items():
                        k = tuple(d.get(v) for v in names)
                        bucket = index[k]
                        _remove(bucket, entry)
                        if not bucket:
                            del index[k]
            if fresh:
                self.solver.prepare(bep, fresh.values())
            for e, trs in fresh.values():
                mus = self.solver(bep, e, trs)
                if mus or not self.forget:  # (forgetting, an item enters once: no match, no use)
                    known[e.seq] = (e, trs)
                if e.end - e.start > self._span[i]:
                    self._span[i] = e.end - e.start
                for mu in mus:
                    self._ids += 1
                    m = EventMapping(mu, e.start, e.end, frozenset((e.seq,)))
                    entry = (e.start, self._ids, m)
                    insort(self._maps[i], entry)
                    self._entries_of[i].setdefault(e.seq, []).append(entry)
                    d = dict(mu)
                    for names, index in self._index[i].items():
                        insort(index.setdefault(tuple(d.get(v) for v in names), []), entry)
                    new.append((i, self._ids, m))
        return new

    @property
    def trims(self) -> bool:
        """E_1 SEQ^c / SEQ^r E_2 of two BEPs: consumed and dead items set aside."""
        return self._trim

    def live_items(self) -> set[int]:
        return set().union(*(known.keys() for known in self._items.values()))

    def _hide(self, i: int, item: int) -> None:
        """Take an item's entries of leaf i out of the lookups (kept for :meth:`_show`)."""
        entries = self._entries_of[i].pop(item, [])
        self._off[i][item] = entries
        for entry in entries:
            _remove(self._maps[i], entry)
            d = dict(entry[2].mu)
            for names, index in self._index[i].items():
                k = tuple(d.get(v) for v in names)
                bucket = index[k]
                _remove(bucket, entry)
                if not bucket:
                    del index[k]

    def _show(self, i: int, item: int) -> None:
        entries = self._off[i].pop(item)
        self._entries_of[i][item] = entries
        for entry in entries:
            insort(self._maps[i], entry)
            d = dict(entry[2].mu)
            for names, index in self._index[i].items():
                insort(index.setdefault(tuple(d.get(v) for v in names), []), entry)

    def consume(self, items: AbstractSet[int]) -> None:
        """Items an evaluation consumed (P^c / P^r), dropped at once when forgetting: they
        stay consumed while in the window, and none enters a window twice."""
        if not (self._trim and self.forget):
            return
        for item in items:
            for i in (0, 1):
                self._drop(i, item)
            self._dead.discard(item)

    def _drop(self, i: int, item: int) -> None:
        """Forget an item of leaf i for good: its entries, set aside or not, and the item."""
        if item in self._entries_of[i]:
            self._hide(i, item)
        self._off[i].pop(item, None)
        self._items[i].pop(item, None)

    def _set_aside(self, new: list[tuple[int, int, EventMapping]], consumed: AbstractSet[int],
                   floor: int | None) -> None:
        """Before an evaluation of E_1 SEQ^c/r E_2: consumed items are invisible for good (an
        item stays consumed while it is in the window); a right mapping with no unconsumed
        left one ending before it starts is never usable (Eq. (10)/(11) select among usable
        ones only), and stays so while left mappings come later than it starts: for good
        once no item still to come can end before it starts (``floor``)."""
        if any(i == 0 and m.t2 < self._dead_t1 for i, _, m in new):
            for item in list(self._dead):  # a left one came out of time order
                self._show(1, item)
            self._dead.clear()
            self._dead_t1 = -(1 << 62)
        if consumed:
            if self.forget:  # the others were dropped as they were consumed
                fresh = {(i, s) for i, _, m in new for s in m.just if s in consumed}
                for i, item in fresh:
                    self._drop(i, item)
            else:
                for i in (0, 1):
                    for item in [s for s in self._entries_of[i] if s in consumed]:
                        self._hide(i, item)
        forget = self.forget and floor is not None
        for item, entries in list(self._entries_of[1].items()):
            if all(not self._usable(m) for _, _, m in entries):
                t1 = max(m.t1 for _, _, m in entries)
                if forget and t1 <= floor:
                    self._drop(1, item)
                else:
                    self._hide(1, item)
                    self._dead.add(item)
                    self._dead_t1 = max(self._dead_t1, t1)

    def _usable(self, m2: EventMapping) -> bool:
        """Some left mapping ends before m2 starts (scanned in start order: an entry that
        starts at or after m2 does not end before it, nor does any after it)."""
        t1 = m2.t1
        for start, _, m in self._lookup(0, dict(m2.mu)):
            if start >= t1:
                return False
            if m.t2 < t1 and start >= 0:
                return True
        return False

    def _pick(self, m2: EventMapping) -> list[EventMapping]:
        """pick(FIRST / LAST) of the left mappings that end before m2 starts, as
        events_reference._seq computes it over all of them, from the few that can be it:
        the entries are in start order and none is longer than the leaf's span."""
        bucket = self._lookup(0, dict(m2.mu))
        hi = m2.t1 - 1
        out: list[EventMapping] = []
        if self.match.selection is Selection.CHRONOLOGICAL:
            best = None
            for start, _, m in bucket:
                if start > hi or (best is not None and start > best[0]):
                    break
                if start < 0 or m.t2 > hi:
                    continue
                k = (m.t2, start)
                if best is None or k < best:
                    best, out = k, [m]
                elif k == best:
                    out.append(m)
            return out
        span = self._span[0]
        best = None
        for j in range(bisect_right(bucket, (hi, 1 << 62)) - 1, -1, -1):
            start, _, m = bucket[j]
            if start < 0 or (best is not None and start + span < best[0]):
                break
            if m.t2 > hi:
                continue
            k = (m.t2, start)
            if best is None or k > best:
                best, out = k, [m]
            elif k == best:
                out.append(m)
        out.reverse()  # ties in the order of the entries, as last() keeps them
        return out

    def _pair(self) -> list[EventMapping]:
        """Eq. (10) / (11) for E_1 SEQ E_2 after _set_aside: every visible right mapping is
        usable, and only the lefts pick() can choose are looked at."""
        sel = self.match.selection
        rights = [m for _, _, m in self._maps[1] if m.t1 >= 0]
        picked = {id(m2): self._pick(m2) for m2 in rights}
        usable = [m2 for m2 in rights if picked[id(m2)]]
        out: list[EventMapping] = []
        for m2 in selection.select(sel, usable, interval, _compatible):
            for m1 in picked[id(m2)]:
                out.append(EventMapping(merge(m1.mu, m2.mu), m1.t1, m2.t2, m1.just | m2.just))
        return out

    def _build(self, j: int, names: tuple[str, ...]) -> dict[tuple, list]:
        index: dict[tuple, list] = {}
        for x in self._maps[j]:
            d = dict(x[2].mu)
            index.setdefault(tuple(d.get(v) for v in names), []).append(x)
        return index

    def _lookup(self, j: int, bound: dict[str, str]) -> list:
        names = tuple(v for v in self.leaves[j].variables if v in bound)
        if not names:
            return self._maps[j]
        index = self._index[j].get(names)
        if index is None:
            index = self._index[j][names] = self._build(j, names)
        return index.get(tuple(bound[v] for v in names), [])

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, changes: Mapping[str, list[tuple[bool, Event, tuple]]],
                 consumed: AbstractSet[int] = frozenset(), floor: int | None = None) -> list[EventMapping]:
        """All matches at this evaluation, after the windows' item ``changes`` (``consumed``
        is read during the call only: the engine's own set, not a copy per evaluation;
        ``floor``: no item still to come ends before it, when forgetting)."""
        self.removed = []
        new = self._sync(changes)
        if self._trim:
            self._set_aside(new, consumed, floor)
            return self._pair()
        if not self.delta:
            leaf_of: dict[int, int] = {}
            for j, bep in enumerate(self.leaves):
                leaf_of.setdefault(id(bep), j)

            def lookup(bep: BasicEventPattern, hi: int | None, subst: Mu) -> list[EventMapping]:
                j = leaf_of[id(bep)]
                cands = self._lookup(j, dict(subst)) if subst else self._maps[j]
                return [m for _, _, m in cands if (hi is None or m.t2 <= hi) and m.t1 >= 0
                        and not (consumed and m.just & consumed)]

            # Outside delta mode the reference's evaluate is the general evaluator, over the
            # indexed mappings (the lookup): the differential tests compare delta mode with it.
            # (the lookup applies consumption; the context's set is read only without one)
            ctx = events_reference.Context({}, self.solver, frozenset(), lookup)
            return events_reference.evaluate(self.match.expr, self.match.selection, ctx)
        self.added = []
        new_ids = {mid for _, mid, _ in new}
        for i, mid, m in new:
            for combo, mappings in self._extend(0, i, mid, m, new_ids, (), ()):
                res = mappings[0]
                mu: Mu = res.mu
                just = res.just
                for x in mappings[1:]:
                    mu = merge(mu, x.mu)
                    just = just | x.just
                key = combo
                self._results[key] = em = EventMapping(mu, mappings[0].t1, mappings[-1].t2, just)
                self.added.append(em)
                for s in just:
                    self._by_item.setdefault(s, set()).add(key)
        return list(self._results.values())

    def _extend(self, j: int, fixed: int, fixed_id: int, fixed_map: EventMapping, new_ids: set[int],
                combo: tuple[int, ...], chosen: tuple[EventMapping, ...]):
        """Combinations through leaf ``fixed`` = fixed_map; leaves before it use old mappings only
        (so each new combination is found from its first new mapping)."""
        if j == len(self.leaves):
            yield combo, chosen
            return
        acc: dict[str, str] = dict(fixed_map.mu)
        for x in chosen:
            acc.update(x.mu)
        bound = max((chosen[k].t2 for k in self._before.get(j, ())), default=None)
        if j == fixed:
            cands = [(fixed_map.t1, fixed_id, fixed_map)]
        else:
            cands = self._lookup(j, acc)
            if bound is not None:
                cands = cands[bisect_right(cands, (bound, 1 << 62)):]
        for start, mid, m in cands:
            if j < fixed and mid in new_ids:
                continue
            if bound is not None and start <= bound:
                continue
            if acc and not compatible(m.mu, acc):
                continue
            yield from self._extend(j + 1, fixed, fixed_id, fixed_map, new_ids, combo + (mid,), chosen + (m,))
