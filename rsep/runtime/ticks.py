"""When a windowed query is evaluated: the report policies' instants, the quiet-instant
skip, and the due check (:class:`Ticks`, an object that rsep.runtime.windowed.QueryRuntime
holds and gives, when it is made, all it reads of the query: its windows, report policy,
R2S operator, the background graphs it reads and where their changes are asked for)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyoxigraph as ox

from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.window import WindowKind
from rsep.runtime.r2s import Row
from rsep.windows.incremental import LocalWindow
from rsep.windows.operator import WindowOperator
from rsep.windows.resolved import Window


@dataclass
class BoundWindow:
    iri: str
    stream: str
    window: Window
    op: WindowOperator
    graph: ox.NamedNode | ox.DefaultGraph
    local: LocalWindow | None = None  # the event-local plan (rsep.windows.incremental)


_NEVER = float("inf")


class Ticks:
    """The evaluation instants of one windowed query: what it is given when it is made (and
    reads as it runs: the runtime fills ``windows`` when it is bound, ``reads`` when it
    loads the background), and the state it keeps of the evaluations so far."""

    def __init__(self, windows: list[BoundWindow], report: ReportPolicy, r2s: R2S,
                 consumes: bool, reads: dict[str, list[ox.NamedNode | ox.DefaultGraph]],
                 next_graph_change: Callable[[int, Iterable[str]], int | None]) -> None:
        self.windows = windows
        self.report = report
        self._rstream = r2s is R2S.RSTREAM
        self._consumes = consumes  # (a consuming MATCH is never quiet)
        self._reads = reads  # the background graphs read (by IRI)
        # when one of them next changes (rsep.algebra.runtime.Host.next_graph_change)
        self._next_graph_change = next_graph_change
        self.start: int | None = None
        self.last_tick: int | None = None
        self.arrival: int | None = None  # the time of the last event a window took
        self.period = 0  # the periodic report's, in timeline units (bind)
        # the content versions and rows of the last evaluation that ran the query
        self.versions: tuple[int, ...] | None = None
        self.cache: list[Row] | None = None
        self.graphs_version = 0  # bumped when one of the graphs read changes
        # _grid's answer, (after, until, grid): the same for every ``after`` from the first up
        # to (not including) ``until``, its first instant; the engine asks once an event
        self._grid_memo: tuple[int, float, list[int]] | None = None

    def bind(self, start: int, period: int) -> None:
        """The clock is known: the instant the grids count from, the report period."""
        self.start = start
        self.period = period
        self._grid_memo = None

    def _grid(self, after: int) -> list[int]:
        """Report instants of the time-driven policies, the first one after ``after``."""
        out = []
        rp = self.report
        if rp.window_close:
            for bw in self.windows:
                w = bw.window
                if w.kind is WindowKind.TIME or (w.kind is WindowKind.LANDMARK and w.stepped):
                    out.append(w.next_close(after))
        if rp.periodic is not None:
            out.append((after // self.period + 1) * self.period)
        if rp.at:
            nxt = next((a for a in rp.at if a > after), None)
            if nxt is not None:
                out.append(nxt)
        return out

    def _quiet(self) -> bool:
        """Would an evaluation now output nothing new? (content unchanged, nothing to repeat)"""
        if self._consumes:
            return False
        if self.versions is None:
            return all(bw.op.idle for bw in self.windows) and self.report.non_empty
        if self.versions != self.current_versions():
            return False
        if self.report.non_empty and all(bw.op.empty for bw in self.windows):
            return True
        return not self._rstream or not self.cache

    def current_versions(self) -> tuple[int, ...]:
        """The versions of the windows' content and of the background graphs read."""
        return (*(bw.op.version for bw in self.windows), self.graphs_version)

    def _next_changes(self) -> list[int]:
        return [c for bw in self.windows if (c := bw.op.next_change()) is not None]

    def next_tick(self, bound: int) -> int | None:
        """The next evaluation instant strictly before ``bound``, or None."""
        after = self.last_tick if self.last_tick is not None else (self.start or 0) - 1
        rp = self.report
        by_content = rp.on_arrival or rp.content_change
        memo = self._grid_memo
        if memo is not None and memo[0] <= after < memo[1]:
            if bound <= memo[1] and not by_content:
                return None  # only the grid's instants, none before the bound (most events)
            grid = memo[2]
        else:
            grid = self._grid(after)
            self._grid_memo = (after, min(grid) if grid else _NEVER, grid)
        cands: list[int] = []
        arrival = self.arrival if self.arrival is not None and self.arrival > after else None
        if arrival is not None and by_content:
            cands.append(arrival)
        # (the windows' next changes decide only a quiet skip and content-change reports:
        # not asked for on every arrival otherwise)
        changes: list[int] | None = None
        if grid and min(grid) < bound and self._quiet():
            # Nothing would come out until the content changes: jump to that change.
            # (a background graph's change, too: the evaluation after it may answer anew)
            changes = self._next_changes()
            graph = self._next_graph_change(after, self._reads) if self._reads else None
            first = min(changes + ([arrival] if arrival is not None else [])
                        + ([graph] if graph is not None else []), default=None)
            if first is None:
                grid = []
            elif first - 1 > after:
                grid = self._grid(first - 1)
        cands.extend(grid)
        if rp.content_change:
            if changes is None:
                changes = self._next_changes()
            cands.extend(max(c, after + 1) for c in changes)
        cands = [c for c in cands if after < c < bound]
        return min(cands) if cands else None

    def due(self, tau: int, changed: bool) -> bool:
        """Whether the report policy reports at ``tau`` (``changed``: the windows' content
        changed since the last evaluation)."""
        rp = self.report
        if rp.on_arrival and self.arrival == tau:
            return True
        if rp.content_change and changed:
            return True
        if rp.periodic is not None and tau % self.period == 0:
            return True
        if tau in rp.at:
            return True
        if rp.window_close:
            for bw in self.windows:
                w = bw.window
                if (w.kind is WindowKind.TIME or (w.kind is WindowKind.LANDMARK and w.stepped)) \
                        and (tau - w.origin) % w.beta == 0:
                    return True
        return False
