"""EP-SPARQL's chronological and recent settings, evaluated per instant over a bounded
state (003 Sec. 5: "goals kept only as long as needed").

At instant tau a query sees the occurrences that end by tau, that it has not consumed and
that start inside its window (:func:`rsep.epsparql.reference.window`, ETALIS's window: the
duration bound of its FILTER); what it finds there is output and consumed. Only the window
is held, so the cost of an instant does not depend on how long the stream has been.

The work per instant is cut further by partitioning: when one variable ``v`` occurs in
every triple pattern of the query (``?company`` in query (1)), every solution, every rival
of Eq. (10)/(11) (compatible with mu2) and every preceding candidate (compatible with mu2)
share v's value, so the solutions are the union over v's values c of the evaluation under
``{v -> c}``. A part whose content did not change since it was last evaluated gives nothing
new (what it gave then was output and consumed, which changed it), so only the parts that
got an occurrence, lost one out of the window, or had an item consumed are evaluated.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from heapq import heappop, heappush

from rsep.algebra import selection
from rsep.algebra.epsparql import (
    BGP,
    INF,
    Background,
    Extend,
    Minus,
    Node,
    Path,
    Project,
    Unit,
    Values,
    Var,
    nodes,
    reads_history,
    variables,
)
from rsep.algebra.events import Selection
from rsep.epsparql.matcher import Occurrence, Solution
from rsep.epsparql.operators import World, project

# The reference's evaluate is the general evaluator for what the index does not take (a
# pattern with no partition variable, a partition the index cannot decide, a policy's
# full evaluation): the differential tests compare the index against it.
from rsep.epsparql.reference import evaluate
from rsep.epsparql.seqindex import ChainIndex, SeqIndex


def partition_variable(root: Node) -> str | None:
    """A variable occurring in every triple pattern of the query, when the pattern has only
    stream BGPs below its top-level SELECT (no GRAPH, empty group, BIND or sub-SELECT, whose
    evaluation does not pass the substitution down)."""
    inner = root.arg if isinstance(root, Project) else root
    common: set[str] | None = None
    if reads_history(inner):
        return None
    for n in nodes(inner):
        if isinstance(n, (Background, Unit, Extend, Project, Path, Values, Minus)):
            return None
        if isinstance(n, BGP):
            for tp in n.patterns:
                vs = {t.name for t in tp if isinstance(t, Var) and not t.name.startswith("_b")}
                common = vs if common is None else common & vs
    if not common:
        return None
    if isinstance(root, Project) and root.distinct and root.items is not None \
            and not common & {v for v, e in root.items if e is None}:
        return None  # DISTINCT across parts would be lost
    return min(common)


class PolicyState:
    """Per chronological / recent query: its consumed items, and (partitioned) which parts
    need evaluating at the next instant."""

    def __init__(self, root: Node, policy: Selection) -> None:
        self.root = root
        self.policy = policy
        self.consumed: set[int] = set()
        self.var = partition_variable(root)
        self.positions = sorted({i for n in nodes(root) if isinstance(n, BGP) for tp in n.patterns
                                 for i, t in enumerate(tp) if isinstance(t, Var) and t.name == self.var})
        self.dirty: set[str] = set()
        # (start, item, part): when each noted occurrence leaves the window. Occurrences
        # mostly come in the order of their starts, and then a FIFO holds them in expiry
        # order: popping its head compares no tuples, where a heap's sifting cost ~1.5 k
        # instructions an event (issue 51). The first one out of that order moves them all
        # into a heap (``heap``, None until then) for good.
        self.fifo: deque[tuple[float, int, str]] = deque()
        self.heap: list[tuple[float, int, str]] | None = None
        self.last_start = -INF  # the latest start in the FIFO
        self.item_parts: dict[int, tuple[str, ...]] = {}  # (a tuple: one part, mostly)
        self.full = False  # True: evaluate everything at every instant (the reference)
        self.consumed_since = False  # items consumed since the last evaluation
        # a SEQ of two triple patterns runs on its live candidates (seqindex), a longer
        # chain of them on each part's own occurrences, the window applied by the index as
        # the reference applies it
        self.index: SeqIndex | ChainIndex | None = (SeqIndex.of(root, policy, self.var)
                                                    or ChainIndex.of(root, policy, self.var))
        # the SELECT on the index's path, None when it changes nothing: every variable kept,
        # none computed, no DISTINCT (SELECT ?k ?a ?b over {?k :a ?a} SEQ {?k :b ?b}); each
        # output then is the solution itself, not a copy made by the reference's project
        self.select: Project | None = None
        if isinstance(root, Project):
            keeps_all = root.items is None or (
                all(e is None for _, e in root.items)
                and {v for v, _ in root.items} >= set(variables(root.arg)))
            if root.distinct or not keeps_all:
                self.select = root

    def note(self, oc: Occurrence, window: float) -> None:
        """A new occurrence: its parts change now, and again when it leaves the window (the
        whole query's content, "", when unpartitioned). With an index, only the parts of the
        operands it matches: an occurrence that matches none is read by no evaluation, so
        neither its coming nor its leaving changes a result (nor is an instant evaluated
        for it: the deadlines come from what is noted)."""
        index = self.index
        if index is not None:
            parts = index.note(oc)
            if not parts:
                return
        else:
            parts = [(oc.s, oc.p, oc.o)[i] for i in self.positions]
        for part in parts:
            self.dirty.add(part)
            held = self.item_parts.get(oc.item, ())
            if part not in held:
                self.item_parts[oc.item] = (*held, part)
        if window != INF:
            heap = self.heap
            if heap is None and oc.ta < self.last_start:
                heap = self.heap = list(self.fifo)  # sorted by start: a heap already
                self.fifo.clear()
            if heap is not None:
                for part in parts or ("",):
                    heappush(heap, (oc.ta, oc.item, part))
            else:
                self.last_start = oc.ta
                for part in parts or ("",):
                    self.fifo.append((oc.ta, oc.item, part))

    def evaluate(self, w: World, tau: int, window: tuple[float, bool]) -> list[Solution]:
        h, strict = window
        lo = tau - h
        ex = self.fifo if self.heap is None else self.heap
        while ex and (ex[0][0] <= lo if strict else ex[0][0] < lo):
            self.dirty.add(self._pop()[2])
        self.consumed_since = False
        index = self.index
        if index is not None and not index.slow and not self.full:
            # every part on the index, which reads no World: only the parts that changed
            if not self.dirty:
                return []
            parts, self.dirty = sorted(self.dirty), set()
            exprs = w.exprs
            proj = self.select
            out: list[Solution] = []
            for c in parts:
                got = index.evaluate(c, exprs, lo, strict)
                if got:
                    out.extend(project(proj, got, exprs) if proj is not None else got)
            return out
        w.lo, w.lo_strict, w.consumed, w.memo = lo, strict, self.consumed, {}
        try:
            if self.var is None or self.full:
                return evaluate(self.root, w, self.policy, hi=tau)
            parts, self.dirty = sorted(self.dirty), set()
            root = self.root
            out = []
            for c in parts:
                sub = ((self.var, c),)
                if index is not None and index.indexed(c):
                    got = index.evaluate(c, w.exprs, lo, strict)
                    if got:
                        out.extend(project(root, got, w.exprs) if isinstance(root, Project) else got)
                elif isinstance(root, Project):
                    out.extend(project(root, evaluate(root.arg, w, self.policy, tau, sub), w.exprs))
                else:
                    out.extend(evaluate(root, w, self.policy, tau, sub))
            return out
        finally:
            w.lo, w.lo_strict, w.consumed, w.memo = -INF, False, set(), None

    def consume(self, items: frozenset[int]) -> None:
        """P^c / P^r (000 Appendix A) for one output whose justification is ``items``: they
        are invisible to every later evaluation of the query."""
        self.consumed |= selection.justification((items,))
        self.consumed_since = True
        if self.index is not None:
            self.index.consume(items)
        for i in items:
            self.dirty.update(self.item_parts.get(i, ()))

    def deadline(self, after: int, window: tuple[float, bool]) -> int | None:
        """The first instant after ``after`` (the last one evaluated) at which what the query
        sees changes with no new event: the next one, when it consumed items since its last
        evaluation; the one at which an unconsumed occurrence leaves the window (``ta <= tau -
        h``, or ``<`` for ``<=`` bounds: the first such integer tau). A candidate it selected
        that failed the FILTER blocks its rivals until then; the decision about them becomes
        final at that instant, whether or not an event comes. None: nothing pending."""
        if self.consumed_since:
            return after + 1
        h, strict = window
        ex = self.fifo if self.heap is None else self.heap
        while ex:
            ta, item, part = ex[0]
            if item in self.consumed:
                self._pop()  # invisible already: its leaving changes nothing
                continue
            t = math.ceil(ta + h) if strict else math.floor(ta + h) + 1
            if t > after:
                return t
            self.dirty.add(self._pop()[2])  # left unseen (derived with a past interval)
        return None

    def _pop(self) -> tuple[float, int, str]:
        """The head of the expiry order (the earliest start)."""
        heap = self.heap
        return self.fifo.popleft() if heap is None else heappop(heap)

    def keep_items(self, items: set[int]) -> None:
        """Forget what concerns items no longer held (consumed, or out of the window)."""
        self.consumed &= items
        if self.index is not None:
            self.index.keep_items(items)
        for i in [i for i in self.item_parts if i not in items]:
            del self.item_parts[i]
        heap = self.heap
        if heap is None:
            if any(e[1] not in items for e in self.fifo):
                self.fifo = deque([e for e in self.fifo if e[1] in items])  # (still sorted)
        elif any(e[1] not in items for e in heap):
            self.heap = [e for e in heap if e[1] in items]
            heapq.heapify(self.heap)
