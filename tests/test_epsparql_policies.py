"""EP-SPARQL's chronological and recent settings: the window reading (ETALIS), its agreement
with RSEP-QL over a time-based window, the one known difference with RSEP-QL's landmark
window, and the bounded, partitioned evaluation against the full re-evaluation."""

from __future__ import annotations

import random

import pytest
from conftest import EX, ev, run, short
from test_epsparql_pruning import Q1_30, Q1_OPT, SEQ2_30, stock_stream

from rsep import Engine
from rsep.cep import epsparql as ep
from rsep.lang.epsparql import parse_epsparql

S = EX + "S"
P = "PREFIX : <http://example.org/>\n"
DROP = P + """SELECT ?c ?p1 ?p2 WHERE { { ?c :pr ?p1 } SEQ { ?c :pr ?p2 }
FILTER (?p2 < ?p1 && getDURATION() < 30) }"""
# the example that decides the reading: an old price, then a drop within 30 units
DECIDING = [ev(S, 0, ":c :pr 100 ."), ev(S, 40, ":c :pr 90 ."), ev(S, 50, ":c :pr 80 ."),
            ev(S, 60, ":c :pr 70 .")]


def ep_rows(query, events, policy, full=False):
    eng = Engine()
    eng.register(parse_epsparql(query, policy=policy), name="q")
    if full:
        for rt in ep.EpContext.of(eng).runtimes:
            rt.policy_state.full = True
    return [(o.time, o.start, tuple(sorted((k, short(v)) for k, v in o.bindings.items())))
            for o in eng.run(events)]


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_window_reading_decided_by_an_old_occurrence(policy):
    """At 50, chronological could pick 100 at 0 as ?p1 (the earliest unconsumed price); the
    combination lasts 50 and fails getDURATION() < 30, and 100 would block every later
    drop. ETALIS keeps occurrences only inside the rule's window (003 Sec. 5: time
    constraints pushed into the detection, expired goals pruned), so at 50 the candidates
    start after 20: 90 at 40 is picked, the drop 90 -> 80 is detected and consumed."""
    c = ("c", ":c")
    assert ep_rows(DROP, DECIDING, policy) == [(50, 40, (c, ("p1", "90"), ("p2", "80")))]
    assert len(ep_rows(DROP, DECIDING, "unrestricted")) == 3


def rsepql(window: str, policy: str, extra: str = "") -> str:
    return f"""PREFIX : <http://example.org/>
REGISTER ISTREAM :out AS
SELECT ?x ?y ?z ?_from ?_to
FROM NAMED :S WIN [{window}] AS :w
EVENT ON :w {{ ?x :p ?y . }} AS E_1
EVENT ON :w {{ ?y :q ?z . }} AS E_2
WHERE {{ MATCH {policy} {{ E_1 SEQ E_2 }} {extra} }}"""


def seq_stream(seed: int, n: int = 25) -> list:
    rnd = random.Random(seed)
    out, t = [], 0
    for _ in range(n):
        t += rnd.choice([1, 1, 2, 3])
        trs = " ".join(f":a{rnd.randint(1, 2)} :p :b{rnd.randint(1, 2)} ." if rnd.random() < 0.5
                       else f":b{rnd.randint(1, 2)} :q :c{rnd.randint(1, 2)} ." for _ in range(rnd.randint(1, 2)))
        out.append(ev(S, t, trs))
    return out


@pytest.mark.parametrize("policy", ["UNRESTRICTED", "CHRONOLOGICAL", "RECENT"])
@pytest.mark.parametrize("seed", range(6))
def test_time_bound_equals_rsepql_time_window(policy, seed):
    """With a time bound, Table 1's correspondence holds with RSEP-QL's time-based window
    of the bound's width in place of the landmark: getDURATION() < 5 <-> [RANGE 5]."""
    events = seq_stream(seed)
    want = sorted((o["time"], short(o["bindings"]["x"]), short(o["bindings"]["z"]), o["from"], o["to"])
                  for o in run(rsepql("RANGE 5", policy), events))
    q = P + "SELECT ?x ?y ?z WHERE { { ?x :p ?y } SEQ { ?y :q ?z } FILTER (getDURATION() < 5) }"
    eng = Engine()
    eng.register(parse_epsparql(q, policy=policy.lower()))
    got = sorted((o["time"], short(o["bindings"]["x"]), short(o["bindings"]["z"]), o["from"], o["to"])
                 for o in (x.to_json() for x in eng.run(events)))
    assert got == want and got


@pytest.mark.parametrize("policy", ["CHRONOLOGICAL", "RECENT"])
def test_known_difference_with_the_landmark_window_and_a_filter(policy):
    """Known difference: RSEP-QL's Table 1 form (landmark window, the duration as a FILTER
    after MATCH) selects and consumes 100 -> 90 at 40 (MATCH consumes before the FILTER
    rejects it), so it finds only 80 -> 70 at 60; EP-SPARQL under ETALIS's window finds
    90 -> 80 at 50 (above). The two agree when the bound is RSEP-QL's window (previous test)."""
    q = rsepql("LND 0", policy, "FILTER (?p2 < ?p1 && ?_to - ?_from < 30)").replace(
        "?x ?y ?z", "?c ?p1 ?p2").replace("?x :p ?y", "?c :pr ?p1").replace("?y :q ?z", "?c :pr ?p2")
    got = [(o["time"], o["from"], short(o["bindings"]["p1"]), short(o["bindings"]["p2"])) for o in run(q, DECIDING)]
    assert got == [(60, 50, "80", "70")]
    assert [(t, s, dict(b)["p1"], dict(b)["p2"]) for t, s, b in ep_rows(DROP, DECIDING, policy.lower())] \
        == [(50, 40, "90", "80")]


MIXED = P + """SELECT ?company ?r ?price1 ?price2 WHERE {
{ ?company :downratedby ?r } OPTIONALSEQ { { ?company :hasStockPrice ?price1 }
  SEQ { ?company :hasStockPrice ?price2 } }
{ ?company :hasStockPrice ?price3 } FILTER ( getDURATION() <= 20 ) }"""
UNPARTITIONED = P + """SELECT ?a ?b WHERE { { ?a :hasStockPrice ?p } SEQ { ?b :downratedby ?r }
FILTER (getDURATION() < 12) }"""


@pytest.mark.parametrize("policy", ["chronological", "recent"])
@pytest.mark.parametrize("query", [Q1_30, SEQ2_30, Q1_OPT, MIXED, UNPARTITIONED])
def test_partitioned_evaluation_equals_the_full_reevaluation(policy, query):
    """Evaluating only the parts (values of the shared variable) that changed gives what
    re-evaluating every unconsumed occurrence of the window at every instant gives."""
    for seed in range(2):
        stream = stock_stream(160, seed)
        # (within an instant the parts come out in the order of the variable's values)
        assert sorted(ep_rows(query, stream, policy)) == sorted(ep_rows(query, stream, policy, full=True))


def test_partition_variable():
    pv = ep.PolicyState
    assert pv(parse_epsparql(Q1_30).pattern, ep.Selection.RECENT).var == "company"
    assert pv(parse_epsparql(UNPARTITIONED).pattern, ep.Selection.RECENT).var is None
    with_bind = P + "SELECT ?c WHERE { { ?c :pr ?p } SEQ { ?c :pr ?q BIND (?q AS ?r) } }"
    assert pv(parse_epsparql(with_bind).pattern, ep.Selection.RECENT).var is None


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_policy_state_stays_bounded(policy):
    """What a chronological / recent query holds (occurrences, consumed items, expiry
    entries) stays under a constant as the stream grows: the window's content."""
    peaks = {}
    for n in (400, 1600):
        eng = Engine()
        eng.register(parse_epsparql(Q1_30, policy=policy), name="q")
        ctx = ep.EpContext.of(eng)
        st = ctx.runtimes[0].policy_state
        held: list[int] = []
        process = ctx.process

        def spy(tau, process=process, st=st, held=held, ctx=ctx):
            process(tau)
            held.append(len(ctx.world.occ) + len(st.consumed) + len(st.expiry) + len(st.item_parts))
        ctx.process = spy
        outs = list(eng.run(stock_stream(n, 3)))
        assert outs
        peaks[n] = (max(held[: len(held) // 4]), max(held[len(held) // 2:]))
    (early, late), (early4, late4) = peaks[400], peaks[1600]
    assert late4 <= 2 * max(early, early4) and late4 <= 1.5 * late


def test_a_blocked_candidate_is_output_when_its_blocker_leaves_the_window():
    """Chronological selects before the FILTER: at 10, 75 takes the earliest price, 70 at
    0, as ?p1 and the drop test fails; 70 blocks until it leaves the 30-unit window. The
    first instant after that (31) selects 80 at 5: the complex event [5, 10] is output
    then, with "time" 31 and "to" 10. Under recent, 75 takes 80 at once."""
    events = [ev(S, 0, ":c :pr 70 ."), ev(S, 5, ":c :pr 80 ."), ev(S, 10, ":c :pr 75 ."),
              ev(S, 31, ":d :pr 1 .")]

    def rows(policy):
        eng = Engine()
        eng.register(parse_epsparql(DROP, policy=policy))
        return [(o["time"], o["from"], o["to"], short(o["bindings"]["p1"]), short(o["bindings"]["p2"]))
                for o in (x.to_json() for x in eng.run(events))]
    assert rows("chronological") == [(31, 5, 10, "80", "75")]
    assert rows("recent") == [(10, 5, 10, "80", "75")]
