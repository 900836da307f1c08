"""Window parameters in timeline units, once the stream's kind of time is known."""

from __future__ import annotations

from dataclasses import dataclass

from rsep.algebra.window import Boundary, WindowKind, WindowSpec
from rsep.stream.time import Duration, TimeKind


@dataclass(frozen=True)
class Window:
    kind: WindowKind
    alpha: int = 0  # range
    beta: int = 1  # step
    offset: int = 0  # [FROM NOW-alpha TO NOW-offset]
    t0: int = 0  # landmark
    stepped: bool = False  # landmark with STEP
    count: int = 0
    count_triples: bool = False
    boundary: Boundary = Boundary.RIGHT_CLOSED
    origin: int = 0  # closes at origin + k * beta (Def. 3: 0)

    def aligned(self, t: int) -> int:
        """t' = floor(t / beta) * beta (Def. 3), on a grid shifted to the origin."""
        o = self.origin
        return o + ((t - o) // self.beta) * self.beta

    def next_close(self, after: int) -> int:
        """The first aligned instant after ``after``."""
        o = self.origin
        return o + ((after - o) // self.beta + 1) * self.beta

    def is_close(self, t: int) -> bool:
        """Whether t is an aligned instant."""
        return (t - self.origin) % self.beta == 0

    def bounds(self, t: int) -> tuple[int, int]:
        """(lo, hi) of a time window at t: (lo, hi] or [lo, hi) by the boundary."""
        tp = self.aligned(t)
        return tp - self.alpha, tp - self.offset


def resolve(spec: WindowSpec, kind: TimeKind | None, time_unit_ms: int | None) -> Window:
    def u(d: Duration | None, default: int) -> int:
        return default if d is None else d.units(kind, time_unit_ms)

    if spec.kind is WindowKind.TIME:
        return Window(WindowKind.TIME, alpha=u(spec.range, 0), beta=u(spec.step, 1),
                      offset=u(spec.offset, 0), boundary=spec.boundary, origin=spec.origin)
    if spec.kind is WindowKind.LANDMARK:
        t0 = spec.landmark
        if isinstance(t0, Duration):
            t0 = t0.units(kind, time_unit_ms)
        return Window(WindowKind.LANDMARK, t0=int(t0 or 0), beta=u(spec.step, 1),
                      stepped=spec.step is not None, origin=spec.origin)
    if spec.kind is WindowKind.COUNT:
        return Window(WindowKind.COUNT, count=spec.count or 0, count_triples=spec.count_triples)
    return Window(spec.kind)
