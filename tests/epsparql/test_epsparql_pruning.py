"""EP-SPARQL (003 Sec. 5): time constraints pushed into the incremental evaluation.

A FILTER bounding getDURATION() (or getENDTIME() - getSTARTTIME()) bounds how far back a
partial solution or an occurrence may start and still matter; what starts earlier is
forgotten. The outputs must not change, and what is stored must not grow with the stream."""

from __future__ import annotations

import random

import pytest

from rsep import Engine, EngineError
from rsep.epsparql import reference as ep
from rsep.epsparql import rewrites as rw
from rsep.epsparql import runtime as epr
from rsep.lang.epsparql import parse_epsparql
from rsep.stream.time import TimeKind
from rsep.testing.snippets import EX, ev

P = "PREFIX : <http://example.org/>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
SEQ3 = ("{ ?company :hasStockPrice ?price1 } SEQ { ?company :hasStockPrice ?price2 } "
        "SEQ { ?company :hasStockPrice ?price3 }")
Q1_30 = P + f"""SELECT ?company ?price1 ?price2 ?price3 WHERE {{ {SEQ3}
FILTER ( ?price2 < ?price1 * 0.9 && ?price3 > ?price1 * 1.05 && getDURATION() < 30 ) }}"""
Q1_SPAN = P + f"""SELECT ?company ?price1 ?price3 WHERE {{ {SEQ3}
FILTER ( ?price2 < ?price1 && getENDTIME() - getSTARTTIME() <= 30 && ?price3 > ?price2 ) }}"""
Q1_OPT = P + """SELECT ?company ?r ?price1 ?price2 WHERE {
{ ?company :downratedby ?r } OPTIONALSEQ { { ?company :hasStockPrice ?price1 }
  SEQ { ?company :hasStockPrice ?price2 } }
FILTER ( ?price2 < ?price1 && getDURATION() < 30 ) }"""
SEQ2_30 = P + """SELECT ?company ?price1 ?price2 WHERE {
{ ?company :hasStockPrice ?price1 } SEQ { ?company :hasStockPrice ?price2 }
FILTER ( ?price2 < ?price1 && getDURATION() < 30 ) }"""
UNBOUNDED = P + f"""SELECT ?company WHERE {{ {SEQ3}
FILTER ( ?price2 < ?price1 * 0.9 && ?price3 > ?price1 * 1.05 || getDURATION() < 30 ) }}"""


def stock_stream(n, seed, companies=3):
    rnd = random.Random(seed)
    price = {c: 100 for c in range(companies)}
    out, t = [], 0
    for i in range(n):
        t += rnd.choice([0, 1, 1, 2])
        c = rnd.randrange(companies)
        if rnd.random() < 0.05:
            ttl = f":c{c} :downratedby :agency{rnd.randrange(2)} ."
        else:
            price[c] = max(1, price[c] + rnd.randint(-12, 12))
            ttl = f":c{c} :hasStockPrice {price[c]} ."
        out.append(ev(EX + "S", t, ttl))
        out[-1].seq = i + 1
    return out


def run(queries, events, policy=None, prune=True, watch=None):
    eng = Engine()
    for i, q in enumerate(queries):
        eng.register(parse_epsparql(q, policy=policy), name=f"q{i}")
    ctx = epr.EpContext.of(eng)
    ctx.prune = prune
    if watch is not None:
        process = ctx.process

        def spy(tau):
            process(tau)
            watch.append(ctx.stored())
        ctx.process = spy
    out = [(o.query, o.time, o.start, tuple(sorted(o.bindings.items()))) for o in eng.run(events)]
    return out, ctx


def test_bounds_are_read_from_the_time_filters():
    def h(text, kind=TimeKind.ABSTRACT):
        q = parse_epsparql(P + "SELECT * WHERE { { ?a :p ?b } SEQ { ?a :q ?c } FILTER (" + text + ") }")
        return rw.bound(q.pattern.arg.cond, kind)

    assert h("getDURATION() < 30") == 30
    assert h("?b > 1 && (getDURATION() <= 12 && ?c < 3)") == 12
    assert h("30 > getDURATION()") == 30
    assert h("getENDTIME() - getSTARTTIME() <= 7") == 7
    assert h('getDURATION() < "P30D"^^xsd:duration', TimeKind.DATETIME) == 30 * 86_400_000
    assert h('getDURATION() < "PT1M30S"^^xsd:dayTimeDuration', TimeKind.DATETIME) == 90_000
    for unbounded in ("getDURATION() > 30", "getDURATION() < 30 || ?b > 1", "!(getDURATION() >= 30)",
                      "getDURATION() < 30 && ?b > 1 || ?c < 3",
                      "?b < 3"):
        assert h(unbounded) == ep.INF
    # a number does not bound a dateTime stream's durations, nor a duration an abstract one
    assert h("getDURATION() < 30", TimeKind.DATETIME) == ep.INF
    assert h('getDURATION() < "P30D"^^xsd:duration') == ep.INF


def test_optional_operands_are_not_pruned():
    q = parse_epsparql(Q1_OPT)
    hs = rw.horizons(q.pattern, TimeKind.ABSTRACT)
    f = q.pattern.arg
    srj = f.arg
    assert isinstance(srj, ep.SeqRightJoin)
    assert hs[id(srj.right)] == 30 and hs[id(srj.left)] == ep.INF
    assert rw.leaf_horizon(q.pattern, hs) == ep.INF


@pytest.mark.parametrize("seed", range(2))
def test_pruned_outputs_equal_the_unpruned_evaluator(seed):
    stream = stock_stream(180, seed)
    qs = [Q1_30, Q1_SPAN]
    sizes: list[int] = []
    pruned, ctx = run(qs, stream, watch=sizes)
    full, ctx_full = run(qs, stream, prune=False)
    assert pruned == full and len(full) > 5
    assert ctx.stored() < ctx_full.stored() / 3
    # with an optional operand (not pruned) alongside: still the same outputs
    short = stream[:100]
    assert run([Q1_OPT, Q1_30], short)[0] == run([Q1_OPT, Q1_30], short, prune=False)[0]


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_policies_forget_only_consumed_occurrences(policy):
    stream = stock_stream(80, 5)
    pruned, ctx = run([SEQ2_30], stream, policy)
    full, ctx_full = run([SEQ2_30], stream, policy, prune=False)
    assert pruned == full and full
    assert len(ctx.world.occ) < len(ctx_full.world.occ)


def test_stored_items_stay_bounded_as_the_stream_grows():
    """About 1.3 events per time unit and a 30-unit horizon: the occurrences and partial
    solutions held stay under a constant (the horizon's content, twice for the amortised
    pruning), whether the stream has 500 or 1,500 events."""
    peaks = []
    for n in (500, 1500):
        sizes: list[int] = []
        run([Q1_30], stock_stream(n, 11), watch=sizes)
        peaks.append((max(sizes[: len(sizes) // 4]), max(sizes[len(sizes) // 2:])))
    (early1, late1), (early4, late4) = peaks
    assert late4 <= 2 * max(early1, early4) and late4 <= 1.5 * late1
    sizes = []
    run([UNBOUNDED], stock_stream(150, 11), watch=sizes)
    assert sizes[-1] > 150  # no bound: everything is kept, as before


Q_FILTERS = P + """SELECT * WHERE {
{ { ?company :hasStockPrice ?price1 } OPTIONAL { ?company :downratedby ?r } }
SEQ { ?company :hasStockPrice ?price2 FILTER (?price2 > 90) }
UNION { ?company :downratedby ?r }
FILTER (?price1 > ?price2 && !BOUND(?r) || getDURATION() <= 4 && getSTARTTIME() > 3) }"""


@pytest.mark.parametrize("query", [Q1_30, Q1_SPAN, Q1_OPT, Q_FILTERS])
def test_pushed_filters_give_the_reference_solutions(query):
    """The unrestricted runtime runs the pattern with FILTER conjuncts moved down (and
    duration bounds copied down): its outputs are the Sec. 4.2 solutions of the pattern
    as written (the reference evaluator, over the whole stream)."""
    from collections import Counter

    stream = stock_stream(70, 4)
    q = parse_epsparql(query)
    w = ep.World(ep.OccurrenceStore(), {}, ep.ExprEvaluator(TimeKind.ABSTRACT))
    for e in stream:
        for t in e.triples:
            w.occ.add(ep.Occurrence(str(t.subject), str(t.predicate), str(t.object), e.start, e.end, e.seq))
    want = Counter((tuple(kv for kv in s.mu if kv[0] in q.select), s.ta, s.tw)
                   for s in ep.evaluate(q.pattern, w) if s.tw != -ep.INF)
    eng = Engine()
    eng.register(q)
    got = Counter((tuple(sorted(o.bindings.items())), o.start, o.time) for o in eng.run(stream))
    assert got == want and want


@pytest.mark.parametrize("policy", [None, "chronological", "etalis-chronological"])
def test_a_duration_literal_on_an_abstract_timeline_is_refused(policy):
    """getDURATION() is an xsd:integer on an abstract timeline: comparing it with an
    xsd:duration is a type error for every solution, so the query could never answer.
    It is refused when the first event tells the kind of time, with the number to write."""
    q = P + """SELECT ?company WHERE { { ?company :hasStockPrice ?price1 }
    SEQ { ?company :hasStockPrice ?price2 } FILTER (getDURATION() < "PT2M"^^xsd:duration) }"""
    eng = Engine(time_unit_ms=1000)
    eng.register(parse_epsparql(q, policy=policy), name="q")
    with pytest.raises(EngineError) as e:
        list(eng.run(stock_stream(5, 1)))
    assert str(e.value) == (
        'query q: FILTER (getDURATION() < "PT2M"^^xsd:duration): on an abstract timeline '
        'getDURATION() is an xsd:integer of time units; compare it with a number ("PT2M" is '
        "120 of this run's time units)")
    assert rw.mismatched_bounds(parse_epsparql(Q1_30).pattern, TimeKind.ABSTRACT) is None
    assert rw.mismatched_bounds(parse_epsparql(Q1_30).pattern, TimeKind.DATETIME) == (
        "FILTER (getDURATION() < 30): on a dateTime stream getDURATION() is an "
        'xsd:dayTimeDuration; compare it with one, e.g. "PT30S"^^xsd:dayTimeDuration')
