"""The stream-BGP matcher (rsep.epsparql.matcher): matching from any pattern first gives the
same solutions, in the same order, as matching in the written order; the semi-naive terms
of the incremental evaluator start from their current-instant pattern and so cost what the
current instant's occurrences bind, not the history."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.algebra.epsparql import Var
from rsep.epsparql.matcher import Occurrence, OccurrenceStore, match_bgp

TERMS = ["<urn:a>", "<urn:b>", "<urn:c>"]
PREDS = ["<urn:p>", "<urn:q>"]
term = st.one_of(st.sampled_from(TERMS), st.sampled_from("xyz").map(Var))
pattern = st.tuples(term, st.one_of(st.sampled_from(PREDS), st.sampled_from("xyz").map(Var)), term)
occurrence = st.tuples(st.sampled_from(TERMS), st.sampled_from(PREDS), st.sampled_from(TERMS),
                       st.integers(0, 3))


def _store(occs) -> OccurrenceStore:
    store = OccurrenceStore()
    for item, (s, p, o, t) in enumerate(sorted(occs, key=lambda x: x[3]), 1):
        store.add(Occurrence(s, p, o, t, t, item))
    return store


@settings(max_examples=300, deadline=None)
@given(st.lists(pattern, min_size=1, max_size=4), st.lists(occurrence, max_size=12), st.data())
def test_any_first_pattern_gives_the_same_solutions_in_the_same_order(patterns, occs, data):
    store = _store(occs)
    tau = max((t for *_, t in occs), default=0)
    fresh = [x for x in store.all if x.tw == tau]

    def now(s, p, o):
        return (x for x in fresh if (p is None or x.p == p) and (o is None or x.o == o)
                and (s is None or x.s == s))

    def before(s, p, o):
        return (x for x in store.candidates(s, p, o) if x.tw < tau)

    def upto(s, p, o):
        return (x for x in store.candidates(s, p, o) if x.tw <= tau)

    pats = tuple(patterns)
    m = len(pats)
    i = data.draw(st.integers(0, m - 1))
    sources = [before] * i + [now] + [upto] * (m - i - 1)
    assert match_bgp(pats, sources, first=i) == match_bgp(pats, sources)


def test_a_term_starts_from_the_current_instant():
    # 1,000 earlier observations and one at the instant: the term whose current-instant
    # pattern is the second one looks up the first by the value it binds
    store = OccurrenceStore()
    for k in range(1000):
        store.add(Occurrence(f"<urn:o{k}>", "<urn:procedure>", "<urn:s>", k, k, k + 1))
    store.add(Occurrence("<urn:o1000>", "<urn:procedure>", "<urn:s>", 1000, 1000, 1001))
    store.add(Occurrence("<urn:o1000>", "<urn:result>", '"7"', 1000, 1000, 1001))
    looked: list[tuple] = []

    def before(s, p, o):
        looked.append((s, p, o))
        return (x for x in store.candidates(s, p, o) if x.tw < 1000)

    def now(s, p, o):
        return (x for x in store.fresh if (p is None or x.p == p) and (s is None or x.s == s))

    pats = ((Var("o"), "<urn:procedure>", Var("sensor")), (Var("o"), "<urn:result>", Var("v")))
    assert match_bgp(pats, [before, now], first=1) == []  # o1000's procedure is not before
    assert looked == [("<urn:o1000>", "<urn:procedure>", None)]
