"""Hypothesis strategies the property tests share: window specifications of every kind and
report policies (000 Defs. 3 and 5)."""

from __future__ import annotations

from hypothesis import strategies as st

from rsep.algebra.policy import ReportPolicy
from rsep.algebra.window import Boundary, WindowKind, WindowSpec
from rsep.stream.time import Duration


def d(n: int) -> Duration:
    return Duration(n, False, str(n))


specs = st.one_of(
    st.builds(lambda a, b, off, right: WindowSpec(
        WindowKind.TIME, range=d(a + off), step=d(b), offset=d(off) if off else None,
        boundary=Boundary.RIGHT_CLOSED if right else Boundary.LEFT_CLOSED),
        st.integers(1, 6), st.integers(1, 4), st.integers(0, 2), st.booleans()),
    st.builds(lambda n, tr: WindowSpec(WindowKind.COUNT, count=n, count_triples=tr),
              st.integers(1, 4), st.booleans()),
    st.builds(lambda t0: WindowSpec(WindowKind.LANDMARK, landmark=t0), st.integers(0, 6)),
    st.just(WindowSpec(WindowKind.NOW)),
)

policies = st.one_of(
    st.just(ReportPolicy(window_close=True)),
    st.just(ReportPolicy(window_close=True, non_empty=True)),
    st.just(ReportPolicy(on_arrival=True)),
    st.just(ReportPolicy(content_change=True)),
    st.builds(lambda p, ne: ReportPolicy(periodic=d(p), non_empty=ne), st.integers(1, 3), st.booleans()),
)
