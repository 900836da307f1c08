"""Where a run's time goes, per pipeline stage (``rsep run --stage-times``, ``rsep bench``).

Opt-in: each timed call costs ~0.3 us, a few per cent of an event. Times are exclusive
(a stage's calls into another stage count for the inner one), so the stages add up to
the time spent inside them, and the rest of a run is the engine's own loop (ticks,
dispatch).

Stages:
- ``parse``: reading the stream files, parsing RDF, assembling and merging events;
- ``match``: graph pattern matching: SPASEQ's GPMs, the SPARQL queries over windows
  (pyoxigraph), a maintained result's matching of each event on arrival;
- ``state``: the automaton and its runs (SPASEQ), window maintenance (RSP-QL, C-SPARQL,
  CQELS) and a maintained result's joins and groups, EP-SPARQL's Delta (its operators
  match triple patterns as they go);
- ``output``: R2S, building results, writing them to the sink.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

STAGES = ("parse", "match", "state", "output")
REPORTED = (*STAGES, "engine")  # what report() gives: the stages and the rest of the run

if TYPE_CHECKING:
    from rsep.runtime.engine import Engine

T = TypeVar("T")


class _Timed:
    """A SPASEQ machine with its ``process`` timed: a compiled machine's methods cannot be
    replaced on the object, so the runtime is handed this instead."""

    def __init__(self, machine: Any, process: Callable[..., Any]) -> None:
        self._machine = machine
        self.process = process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._machine, name)


class StageClock:
    """Exclusive seconds per stage, from timed callables."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._inner = 0.0  # time of nested timed calls, taken off the caller's stage

    def timed(self, stage: str, f: Callable[..., T]) -> Callable[..., T]:
        sec = self.seconds
        clock = time.perf_counter

        def call(*a: Any, **k: Any) -> T:
            saved, self._inner = self._inner, 0.0
            t = clock()
            try:
                return f(*a, **k)
            finally:
                d = clock() - t
                sec[stage] += d - self._inner
                self._inner = saved + d

        return call

    def wrap(self, obj: object, stage: str, *methods: str) -> None:
        """Time these bound methods of ``obj`` (those it has) as ``stage``."""
        for m in methods:
            f = getattr(obj, m, None)
            if f is not None:
                setattr(obj, m, self.timed(stage, f))

    def iterate(self, stage: str, it: Iterable[T]) -> Iterator[T]:
        """``it``'s items, the time spent producing them counted as ``stage``."""
        nxt = self.timed(stage, iter(it).__next__)
        while True:
            try:
                yield nxt()
            except StopIteration:
                return

    def instrument(self, engine: Engine) -> None:
        """Time the registered queries of ``engine`` (an rsep.runtime.engine.Engine)."""
        for rt in engine.queries:
            self._query(rt)

    def _query(self, rt: Any) -> None:
        # SPASEQ: the automaton (NFA or chain engine) exists once bind() has run
        if hasattr(rt, "gpm") and hasattr(rt, "machine"):
            self.wrap(rt.gpm, "match", "begin", "local", "rows", "holds", "end", "prefetch")
            bind = rt.bind

            def bound(*a: Any, **k: Any) -> None:
                bind(*a, **k)
                rt.machine = _Timed(rt.machine, self.timed("state", rt.machine.process))

            rt.bind = bound
            self.wrap(rt, "output", "_outputs")
            return
        # EP-SPARQL: Delta matches triple patterns inside its operators, so both count
        # as state
        if hasattr(rt, "delta"):
            self.wrap(rt, "state", "insert", "evaluate")
            self.wrap(rt, "output", "outputs", "instantiate")
            return
        # windowed queries (RSP-QL, C-SPARQL, CQELS): windows, SPARQL, R2S and results; a
        # maintained result (made by bind) matches each event on arrival and keeps its
        # joins and groups as state
        self.wrap(rt, "state", "insert", "_advance")
        self.wrap(rt, "match", "_run", "_direct", "_direct_delta")
        self.wrap(rt, "output", "evaluate")
        bind_windows = rt.bind

        def bound_windows(*a: Any, **k: Any) -> None:
            bind_windows(*a, **k)
            if getattr(rt, "result", None) is not None:
                self.wrap(rt.result, "match", "solve")
                self.wrap(rt.result, "state", "rows")

        rt.bind = bound_windows

    def report(self, total: float) -> dict[str, float]:
        """Seconds per stage and ``engine`` (the rest of ``total``)."""
        out = dict(self.seconds)
        out["engine"] = max(0.0, total - sum(self.seconds.values()))
        return out


def table(seconds: dict[str, float], events: int) -> str:
    """The report as text: seconds, share, and microseconds per event."""
    total = sum(seconds.values()) or 1.0
    lines = [f"{'stage':<8} {'seconds':>9} {'share':>7} {'us/event':>9}"]
    for k, v in seconds.items():
        per = v / events * 1e6 if events else 0.0
        lines.append(f"{k:<8} {v:>9.3f} {v / total:>7.1%} {per:>9.1f}")
    lines.append(f"{'total':<8} {total:>9.3f} {'':>7} "
                 f"{(total / events * 1e6 if events else 0.0):>9.1f}")
    return "\n".join(lines)
