"""Window functions of RSEP-QL (000) Def. 3 and the WINDOW pattern (Sec. 4.1)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.algebra.window import Boundary, WindowKind
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import EX, run, table, triples
from rsep.windows import reference
from rsep.windows.operator import WindowOperator
from rsep.windows.resolved import Window


def names(content) -> list[tuple[str, int]]:
    return [(e.graph.removeprefix(EX), e.start) for e, _ in content]


def test_example2_landmark_time_and_nested_interval(figure1):
    landmark = Window(WindowKind.LANDMARK, t0=1)
    time_based = Window(WindowKind.TIME, alpha=5, beta=1)
    assert names(reference.content(landmark, figure1, 8)) == [("G1", 2), ("G2", 4), ("G3", 6), ("G4", 8)]
    assert names(reference.content(time_based, figure1, 8)) == [("G2", 4), ("G3", 6), ("G4", 8)]
    nested = reference.nest_interval(reference.content(landmark, figure1, 8), 0, 5)
    assert names(nested) == [("G1", 2), ("G2", 4)]


def test_example5_snapshot_at_12(figure1):
    w2 = Window(WindowKind.TIME, alpha=5, beta=1)
    assert reference.snapshot(w2, figure1, 12) == set(
        triples(":a3 :p :b3 . :b1 :q :c1 . :b2 :q :c2 ."))


EXAMPLE4 = """
PREFIX : <http://example.org/>
SELECT ?x ?y
FROM NAMED :S WIN [LND 1] AS :w_1
FROM NAMED :S WIN [RANGE 5] AS :w_2
WHERE { WINDOW :w_2 { ?x :p ?y . } }
"""


def test_example6_window_pattern_at_12(figure1):
    out = [r for r in table(run(EXAMPLE4, figure1, until=12)) if r[0] == 12]
    assert out == [(12, {"x": ":a3", "y": ":b3"})]


def test_alignment_floor_t_over_beta(figure1):
    # W^tau[(5, 4)] at 11: t' = floor(11/4)*4 = 8, content (3, 8].
    w = Window(WindowKind.TIME, alpha=5, beta=4)
    assert names(reference.content(w, figure1, 11)) == [("G2", 4), ("G3", 6), ("G4", 8)]
    # ... and the half-open interval: G1 at 2 is out of (2, 7] at 7 (beta 1).
    assert names(reference.content(Window(WindowKind.TIME, alpha=5, beta=1), figure1, 7)) == [
        ("G2", 4), ("G3", 6)]


def test_csparql_boundary_is_left_closed(figure1):
    w = Window(WindowKind.TIME, alpha=4, beta=2, boundary=Boundary.LEFT_CLOSED)
    # [4, 8) at 8: G4 at 8 is not in yet, G2 at 4 is.
    assert names(reference.content(w, figure1, 8)) == [("G2", 4), ("G3", 6)]


def test_count_and_landmark_windows(figure1):
    assert names(reference.content(Window(WindowKind.COUNT, count=2), figure1, 8)) == [("G3", 6), ("G4", 8)]
    tc = reference.content(Window(WindowKind.COUNT, count=3, count_triples=True), figure1, 8)
    assert [(g, len(tr)) for (g, _), (_, tr) in zip(names(tc), tc, strict=True)] == [("G3", 1), ("G4", 2)]
    assert names(reference.content(Window(WindowKind.LANDMARK, t0=5), figure1, 10)) == [
        ("G3", 6), ("G4", 8), ("G5", 10)]
    assert names(reference.content(Window(WindowKind.NOW), figure1, 8)) == [("G4", 8)]


def test_interval_events_intersect_the_window():
    e = Event("s", "g", 3, 9, triples(":a :p :b ."), TimeKind.ABSTRACT, 1)
    w = Window(WindowKind.TIME, alpha=2, beta=1)
    assert names(reference.content(w, [e], 9)) == [("g", 3)]  # [3,9] meets (7, 9]
    assert names(reference.content(w, [e], 12)) == []  # [3,9] misses (10, 12]
    assert names(reference.content(w, [e], 8)) == []  # not arrived before its end


# --- the incremental operator equals the definition, evaluation time by evaluation time

windows = st.one_of(
    st.builds(lambda a, b, off, right: Window(WindowKind.TIME, alpha=a + off, beta=b, offset=off,
                                              boundary=Boundary.RIGHT_CLOSED if right else Boundary.LEFT_CLOSED),
              st.integers(1, 8), st.integers(1, 4), st.integers(0, 3), st.booleans()),
    st.builds(lambda t0, stepped, b: Window(WindowKind.LANDMARK, t0=t0, stepped=stepped, beta=b),
              st.integers(0, 10), st.booleans(), st.integers(1, 3)),
    st.builds(lambda n, tr: Window(WindowKind.COUNT, count=n, count_triples=tr),
              st.integers(1, 5), st.booleans()),
    st.just(Window(WindowKind.NOW)),
    st.just(Window(WindowKind.UNBOUNDED)),
)

POOL = triples(":a :p 1 . :a :p 2 . :b :p 1 . :b :q :c . :c :q :d .")


@st.composite
def streams(draw):
    n = draw(st.integers(0, 12))
    t = 0
    out = []
    for i in range(n):
        t += draw(st.integers(0, 3))
        length = draw(st.integers(0, 2))
        trs = tuple(draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True)))
        out.append(Event("s", f"g{i}", t, t + length, trs, TimeKind.ABSTRACT, i + 1))
    out.sort(key=lambda e: (e.end, e.seq))
    return out


@settings(max_examples=300, deadline=None)
@given(windows, streams(), st.lists(st.integers(0, 4), min_size=1, max_size=8))
def test_operator_matches_reference(w, stream, gaps):
    op = WindowOperator(w)
    from collections import Counter

    live: Counter = Counter()
    i = 0
    t = stream[0].end if stream else 0
    for gap in gaps + [40]:
        while i < len(stream) and stream[i].end <= t:
            op.insert(stream[i])
            i += 1
        added, removed = op.advance(t)
        live.update(tr for tr, _ in added)
        live.subtract(tr for tr, _ in removed)
        live = +live
        expected = Counter(tr for _, trs in reference.content(w, stream, t) for tr in trs)
        assert live == expected, (t, w)
        assert op.empty == (not expected)
        t += gap
