"""When a windowed query is evaluated: the report policies' instants, the quiet-instant
skip, and the due check (the tick logic of rsep.runtime.windowed.QueryRuntime, a mixin)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.window import WindowKind
from rsep.runtime.r2s import R2SOperator, Row
from rsep.windows.incremental import LocalWindow
from rsep.windows.operator import WindowOperator
from rsep.windows.resolved import Window

if TYPE_CHECKING:
    from rsep.algebra.runtime import Host


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
    """The evaluation instants of a QueryRuntime, from its state (declared here)."""

    engine: Host
    windows: list[BoundWindow]
    report: ReportPolicy
    r2s: R2SOperator
    start: int | None
    last_tick: int | None
    arrival: int | None
    _period: int
    _consumes: bool
    _versions: tuple[int, ...] | None
    _cache: list[Row] | None
    _reads: dict[str, list[ox.NamedNode | ox.DefaultGraph]]  # the background graphs read
    _graphs_version: int  # bumped when one of them changes
    # _grid's answer, (after, until, grid): the same for every ``after`` from the first up to
    # (not including) ``until``, its first instant; the engine asks once an event
    _grid_memo: tuple[int, float, list[int]] | None = None

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
            out.append((after // self._period + 1) * self._period)
        if rp.at:
            nxt = next((a for a in rp.at if a > after), None)
            if nxt is not None:
                out.append(nxt)
        return out

    def _quiet(self) -> bool:
        """Would an evaluation now output nothing new? (content unchanged, nothing to repeat)"""
        if self._consumes:
            return False
        if self._versions is None:
            return all(bw.op.idle for bw in self.windows) and self.report.non_empty
        if self._versions != self._current_versions():
            return False
        if self.report.non_empty and all(bw.op.empty for bw in self.windows):
            return True
        return self.r2s.op is not R2S.RSTREAM or not self._cache

    def _current_versions(self) -> tuple[int, ...]:
        return (*(bw.op.version for bw in self.windows), self._graphs_version)

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
            graph = self.engine.next_graph_change(after, self._reads) if self._reads else None
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

    def _due(self, tau: int, changed: bool) -> bool:
        rp = self.report
        if rp.on_arrival and self.arrival == tau:
            return True
        if rp.content_change and changed:
            return True
        if rp.periodic is not None and tau % self._period == 0:
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
