"""Hypothesis strategies the property tests share: window specifications of every kind,
report policies (000 Defs. 3 and 5), and streams of observations."""

from __future__ import annotations

from hypothesis import strategies as st

from rsep.algebra.policy import ReportPolicy
from rsep.algebra.window import Boundary, WindowKind, WindowSpec
from rsep.stream.event import Event
from rsep.stream.time import Duration, TimeKind
from rsep.testing.snippets import triples


def d(n: int) -> Duration:
    return Duration(n, False, str(n))


def window_specs(ranges: tuple[int, int] = (1, 6), counts: tuple[int, int] = (1, 4)
                 ) -> st.SearchStrategy[WindowSpec]:
    """Window specifications of every kind: ``ranges`` bounds a time window's range (before
    its offset), ``counts`` a count window's size."""
    return st.one_of(
        st.builds(lambda a, b, off, right, o: WindowSpec(
            WindowKind.TIME, range=d(a + off), step=d(b), offset=d(off) if off else None,
            boundary=Boundary.RIGHT_CLOSED if right else Boundary.LEFT_CLOSED, origin=o),
            st.integers(*ranges), st.integers(1, 4), st.integers(0, 2), st.booleans(),
            # closes aligned to 0 (000 Def. 3) or elsewhere (--window-origin)
            st.sampled_from((0, 0, 1, 2, -3))),
        st.builds(lambda n, tr: WindowSpec(WindowKind.COUNT, count=n, count_triples=tr),
                  st.integers(*counts), st.booleans()),
        st.builds(lambda t0: WindowSpec(WindowKind.LANDMARK, landmark=t0), st.integers(0, 6)),
        st.just(WindowSpec(WindowKind.NOW)),
    )


specs = window_specs()


@st.composite
def observations(draw: st.DrawFn, values: st.SearchStrategy[str],
                 sensors: tuple[str, ...] = (":s0", ":s1", ":s2", ":s3"),
                 events: tuple[int, int] = (1, 12), keep: st.SearchStrategy[bool] | None = None,
                 second: bool = False) -> list[Event]:
    """Observation events on streams http://s1 and http://s2 (Turtle, ``:`` the prefix the
    snippets declare): ``?obs :by ?sensor ; :val ?v ; a :Obs``, each triple kept by ``keep``,
    a second value now and then when ``second``; the observations' IRIs drawn from a small
    pool, so that events sometimes share one (a window's locality check fails, then holds
    again), some a blank node."""
    n = draw(st.integers(*events))
    t = draw(st.integers(0, 3))
    out = []
    for i in range(n):
        t += draw(st.integers(0, 3))
        obs = draw(st.sampled_from([f":o{i}", f":o{i}", f":o{i}", ":o0", ":o1", "_:b1", f"_:n{i}"]))
        sensor = draw(st.sampled_from(sensors))
        parts = [f"{obs} :by {sensor} .", f"{obs} :val {draw(values)} .", f"{obs} a :Obs ."]
        if second and draw(st.integers(0, 5)) == 0:  # two solutions in one event
            parts.append(f"{obs} :val {draw(values)} .")
        kept = draw(st.lists(st.booleans() if keep is None else keep, min_size=len(parts),
                             max_size=len(parts)))
        ttl = " ".join(p for p, k in zip(parts, kept, strict=True) if k) or parts[0]
        s = draw(st.sampled_from(["http://s1", "http://s2"]))
        out.append(Event(s, f"g{i}", t, t, triples(ttl), TimeKind.ABSTRACT, i + 1))
    return out

policies = st.one_of(
    st.just(ReportPolicy(window_close=True)),
    st.just(ReportPolicy(window_close=True, non_empty=True)),
    st.just(ReportPolicy(on_arrival=True)),
    st.just(ReportPolicy(content_change=True)),
    st.builds(lambda p, ne: ReportPolicy(periodic=d(p), non_empty=ne), st.integers(1, 3), st.booleans()),
)
