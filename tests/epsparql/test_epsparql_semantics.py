"""EP-SPARQL (003 Sec. 4.2): monotonicity, the Q-closure, background RDFS, downward
compatibility with SPARQL, and RSEP-QL's Table 1 correspondence (000)."""

from __future__ import annotations

import importlib
import random
import sys
import types
from collections import Counter

import pyoxigraph as ox
import pytest

from rsep import Engine, QueryError
from rsep.algebra import selection
from rsep.algebra.events import Selection
from rsep.algebra.selection import TABLE1
from rsep.epsparql import reference as ep
from rsep.epsparql import runtime as epr
from rsep.lang.epsparql import parse_epsparql
from rsep.testing.snippets import EX, ev, run, short, triples

P = "PREFIX : <http://example.org/>\n"
S = EX + "S"


def ep_run(queries, events, policy=None, graphs=None):
    eng = Engine()
    for iri, ttl in (graphs or {}).items():
        eng.add_graph(iri, triples(ttl))
    for i, q in enumerate(queries):
        eng.register(parse_epsparql(q, policy=policy), name=f"q{i + 1}")
    return [o.to_json() | {"query": o.query} for o in eng.run(events)]


def rows(out, *names):
    return sorted((o["time"], o["from"], *(short(o["bindings"].get(n, "-")) for n in names))
                  for o in out if "bindings" in o)


# ---------------------------------------------------------------- monotonicity


def world(events):
    w = ep.World(ep.OccurrenceStore(), {}, ep.ExprEvaluator())
    for e in events:
        for t in e.triples:
            w.occ.add(ep.Occurrence(str(t.subject), str(t.predicate), str(t.object), e.start, e.end, e.seq))
    return w


def sols(node, events):
    return {(s.mu, s.ta, s.tw) for s in ep.evaluate(node, world(events))}


def test_seqoptional_counter_example_is_not_monotone_and_not_in_the_language():
    """Query (7): {x -> a} at [0, 0] is a solution on {(a a a, 0, 0)} but not once
    (b b b, 1, 1) arrives; so SEQOPTIONAL is refused, and OPTIONALSEQ (its mirror) is kept."""
    x, y = ep.Var("x"), ep.Var("y")
    mand, opt = ep.BGP(((x, x, x),)), ep.BGP(((y, y, y),))
    s1 = [ev(S, 0, ":a :a :a .")]
    s2 = s1 + [ev(S, 1, ":b :b :b .")]
    w1, w2 = world(s1), world(s2)

    def seqoptional(w):  # the hypothetical operator: mandatory, then optional after it
        a, b = ep.evaluate(mand, w), ep.evaluate(opt, w)
        return {(s.mu, s.ta, s.tw) for s in ep.left_join(a, b, None, w.exprs, lambda m, o: m.tw < o.ta)}

    alone = (((("x", f"<{EX}a>"),)), 0, 0)
    assert alone in seqoptional(w1) and alone not in seqoptional(w2)
    with pytest.raises(QueryError, match="timewise monotonicity") as e:
        parse_epsparql(P + "SELECT ?x ?y WHERE { { ?x ?x ?x . } SEQOPTIONAL { ?y ?y ?y . } }")
    assert (e.value.line, e.value.column) == (2, 37)


MIXED = P + """SELECT * WHERE {
  { { ?c :alarm ?l } OPTIONALSEQ { ?c :reading ?r } }
  EQUALSOPTIONAL { ?c :reading ?r2 }
  OPTIONAL { ?c :note ?n }
  { ?c :reading ?v } UNION { ?c :reset ?v }
}"""


def random_stream(seed, n=14):
    rnd = random.Random(seed)
    out = []
    t = 0
    for i in range(n):
        t += rnd.choice([0, 1, 1, 2])
        start = t - rnd.choice([0, 0, 1])
        c = rnd.choice([":c1", ":c2"])
        p = rnd.choice([":alarm", ":reading", ":note", ":reset"])
        out.append(ev(S, (start, t), f"{c} {p} {rnd.randint(1, 3)} ."))
        out[-1].seq = i + 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_timewise_monotonicity_of_the_operators_in_the_language(seed):
    """Sec. 4.2: solutions over {occ | t_omega < t1} stay solutions over {occ | t_omega < t2}."""
    node = parse_epsparql(MIXED).pattern
    stream = random_stream(seed)
    ends = sorted({e.end for e in stream}) + [10**6]
    prev: set = set()
    for t in ends:
        cur = sols(node, [e for e in stream if e.end < t])
        assert prev <= cur
        prev = cur


@pytest.mark.parametrize("seed", range(6))
def test_push_outputs_equal_the_reference_solutions(seed):
    """The runtime outputs every solution once, at its t_omega, and nothing else."""
    q = parse_epsparql(MIXED)
    stream = random_stream(seed)
    ref = Counter((s.mu, s.ta, s.tw) for s in ep.evaluate(q.pattern, world(stream)))
    eng = Engine()
    eng.register(q)
    got = Counter()
    for o in eng.run(stream):
        got[(tuple(sorted(o.bindings.items())), o.start, o.time)] += 1
    assert got == ref


# ---------------------------------------------------------------- rules, background


def test_non_terminating_rules_are_reported(monkeypatch):
    # the engine's bound is 1,000 rounds; 100 show the same (each round re-derives the
    # instant, so the default costs a minute here)
    monkeypatch.setattr(epr, "MAX_ROUNDS", 100)
    rule = P + "CONSTRUCT { ?x :n ?m } WHERE { ?x :n ?k BIND (?k + 1 AS ?m) }"
    eng = Engine()
    eng.register(parse_epsparql(rule))
    with pytest.raises(epr.RuleLoopError,
                       match=r"do not terminate at time 3: still deriving new triples after "
                             r"101 rounds \(101 derived triples\)"):
        list(eng.run([ev(S, 3, ":a :n 0 .")]))


def test_recursive_rule_reaches_its_fixpoint():
    rule = P + "CONSTRUCT { ?x :before ?z } WHERE { { ?x :before ?y } SEQ { ?y :before ?z } }"
    sel = P + "SELECT ?x ?z WHERE { ?x :before ?z }"
    out = ep_run([rule, sel], [ev(S, 1, ":a :before :b ."), ev(S, 2, ":b :before :c ."),
                               ev(S, 3, ":c :before :d .")])
    got = rows([o for o in out if o["query"] == "q2"], "x", "z")
    assert got == [(1, 1, ":a", ":b"), (2, 1, ":a", ":c"), (2, 2, ":b", ":c"),
                   (3, 1, ":a", ":d"), (3, 2, ":b", ":d"), (3, 3, ":c", ":d")]


KB = """:Fern rdfs:subClassOf :Tracheobionta . :Tracheobionta rdfs:subClassOf :Plant .
:Moss rdfs:subClassOf :Plant . :plants rdfs:subPropertyOf :grows .
:grows rdfs:domain :Gardener ; rdfs:range :Plant .
:ivy a :Tracheobionta ."""
KB = "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n" + KB


def test_background_subclass_query():
    q = P + "SELECT ?x WHERE { ?x a :Tracheobionta }"
    events = [ev(S, 1, ":f1 a :Fern ."), ev(S, 2, ":m1 a :Moss ."), ev(S, 3, ":t1 a :Tracheobionta .")]
    assert rows(ep_run([q], events, graphs={"default": KB}), "x") == [(1, 1, ":f1"), (3, 3, ":t1")]


def test_subproperty_domain_range_and_background_graph_patterns():
    q = P + """SELECT ?g ?p WHERE { { ?g a :Gardener } SEQ { ?g :grows ?p . ?p a :Plant .
               GRAPH <http://kb> { ?p a :Tracheobionta } } }"""
    events = [ev(S, 1, ":ann :plants :rose ."), ev(S, 2, ":ann :plants :ivy ."),
              ev(S, 3, ":bob :grows :ivy .")]
    out = ep_run([q], events, graphs={"http://kb": KB})
    # ann is a Gardener from 1 (domain of :plants, a subproperty of :grows); ivy is a
    # Tracheobionta in the background graph (timeless) and a Plant by the range of :grows
    # from 2 (ann plants ivy) and again from 3 (bob grows ivy): the right-hand BGP takes
    # min start / max end of its occurrences, so it holds over [2, 2] and over [2, 3].
    # bob is a Gardener only from 3 and cannot precede himself.
    assert rows(out, "g", "p") == [(2, 1, ":ann", ":ivy"), (3, 1, ":ann", ":ivy")]


# ---------------------------------------------------------------- downward compatibility


DATA = """:a :p 1 ; :q :b ; :name "A" . :b :p 5 ; :name "B" . :c :p 3 ; :q :a .
:d :r :a . :b :r :c ."""


@pytest.mark.parametrize("query", [
    "SELECT ?x ?v ?y WHERE { ?x :p ?v OPTIONAL { ?x :q ?y FILTER (?v < 4) } }",
    "SELECT ?x ?n WHERE { { ?x :p ?v FILTER (?v > 2) } UNION { ?x :r ?y } OPTIONAL { ?x :name ?n } }",
    "SELECT DISTINCT ?x (?v * 2 AS ?w) WHERE { ?x :p ?v . ?y :q ?x BIND (?v + 1 AS ?u) FILTER (?u > 1) }",
    "SELECT * WHERE { ?x :q ?y . ?y :p ?v . OPTIONAL { ?z :r ?x } }",
])
def test_downward_compatibility_with_sparql(query):
    """All triples at one time stamp: exactly the SPARQL answers (pyoxigraph's)."""
    store = ox.Store()
    for t in triples(DATA):
        store.add(ox.Quad(t.subject, t.predicate, t.object))
    res = store.query(P + query)
    names = [v.value for v in res.variables]
    want = Counter(tuple(sorted((n, str(r[n])) for n in names if r[n] is not None)) for r in res)
    out = ep_run([P + query], [ev(S, 5, DATA)])
    got = Counter(tuple(sorted(o["bindings"].items())) for o in out)
    assert got == want and all(o["from"] == o["to"] == 5 for o in out)


# ---------------------------------------------------------------- RSEP-QL Table 1


RSEPQL = """PREFIX : <http://example.org/>
REGISTER ISTREAM :out AS
SELECT ?x ?y ?z ?_from ?_to
FROM NAMED :S WIN [LND 0] AS :w
EVENT ON :w { ?x :p ?y . } AS E_1
EVENT ON :w { ?y :q ?z . } AS E_2
WHERE { MATCH %s { E_1 SEQ E_2 } }"""
EPSPARQL = P + "SELECT ?x ?y ?z WHERE { { ?x :p ?y } SEQ { ?y :q ?z } }"


def table1_stream(seed):
    rnd = random.Random(seed)
    out, t = [], 0
    for _ in range(10):
        t += rnd.choice([1, 1, 2])
        trs = " ".join(f":{rnd.choice('ab')}{rnd.randint(1, 2)} :{rnd.choice('pq')} "
                       f":b{rnd.randint(1, 2)} ." for _ in range(rnd.randint(1, 2)))
        out.append(ev(S, t, trs.replace(":q :b", ":q :c").replace(":a1 :q", ":b1 :q")
                      .replace(":a2 :q", ":b2 :q").replace(":b1 :p", ":a1 :p").replace(":b2 :p", ":a2 :p")))
    return out


@pytest.mark.parametrize("policy", ["UNRESTRICTED", "CHRONOLOGICAL", "RECENT"])
@pytest.mark.parametrize("stream", ["figure1", 0, 1, 2, 3])
def test_table1_epsparql_seq_equals_rsepql_landmark_match(policy, stream, figure1):
    events = figure1 if stream == "figure1" else table1_stream(stream)
    rq = run(RSEPQL % policy, events)
    want = sorted((o["time"], short(o["bindings"]["x"]), short(o["bindings"]["z"]), o["from"], o["to"])
                  for o in rq)
    for e in events:
        e.seq = 0
    out = ep_run([EPSPARQL], events, policy=policy.lower())
    got = sorted((o["time"], short(o["bindings"]["x"]), short(o["bindings"]["z"]), o["from"], o["to"])
                 for o in out)
    assert got == want
    if stream == "figure1":  # 000 Sec. 2 / Example 11
        assert {"UNRESTRICTED": 4, "CHRONOLOGICAL": 2, "RECENT": 2}[policy] == len(got)


def test_policy_is_an_api_argument_and_naive_is_refused():
    q = parse_epsparql(EPSPARQL, policy="recent")
    assert q.policy is Selection.RECENT
    with pytest.raises(QueryError, match="unknown EP-SPARQL policy"):
        parse_epsparql(EPSPARQL, policy="naive")


def test_cli_runs_epsparql_with_a_policy(tmp_path, capsys):
    from rsep.cli.main import main

    qf = tmp_path / "seq.rq"
    qf.write_text(EPSPARQL)
    data = tmp_path / "s.trig"
    data.write_text("""@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:g1 { :a1 :p :b1 . } :g1 prov:generatedAtTime 2 .
:g2 { :a2 :p :b1 . } :g2 prov:generatedAtTime 4 .
:g3 { :b1 :q :c1 . } :g3 prov:generatedAtTime 6 .
""")
    assert main(["run", str(qf), "--dialect", "epsparql", "--stream", f"{S}={data}",
                 "--policy", "chronological"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ['{"time": 6, "from": 2, "to": 6, "bindings": {"x": "<http://example.org/a1>", '
                     '"y": "<http://example.org/b1>", "z": "<http://example.org/c1>"}}']


def test_generated_hierarchy_subclass_query_matches_the_closure():
    """The background benchmark's 003 Test 2 stand-in, small: ``?x a :Tracheobionta`` gives
    exactly the stream subjects whose class reaches :Tracheobionta by rdfs:subClassOf."""
    import importlib.util

    from rsep.testing.snippets import ROOT

    spec = importlib.util.spec_from_file_location("epsparql_background",
                                                  ROOT / "benchmarks" / "epsparql_background.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    kb, under, outside = bench.hierarchy(3000)
    parent = {str(t.subject): str(t.object) for t in kb}
    top = f"<{bench.EX}Tracheobionta>"

    def reaches(c):
        while c in parent:
            c = parent[c]
            if c == top:
                return True
        return False

    rnd = random.Random(3)
    events, want = [], []
    for i in range(300):
        c = rnd.choice(under if i % 2 else outside)
        events.append(ev(S, i, f"<{bench.EX}x{i}> a <{bench.EX}C{c}> ."))
        if reaches(f"<{bench.EX}C{c}>"):
            want.append((i, i, f"<{bench.EX}x{i}>"))
    assert len(under) == 1500 and len(want) == 150
    eng = Engine()
    eng.add_graph("http://example.org/kb", kb)
    eng.register(parse_epsparql(bench.QUERY))
    got = sorted((o.time, o.start, o.bindings["x"]) for o in eng.run(events))
    assert got == want


SELECTION_CALLERS = ("rsep.events.reference", "rsep.events.mappings", "rsep.events.incremental", "rsep.epsparql.reference",
                     "rsep.epsparql.seqindex", "rsep.epsparql.policy")


@pytest.mark.parametrize("row", [r for r in TABLE1 if r.language == "EP-SPARQL"],
                         ids=lambda r: r.setting)
def test_table1_rows_go_through_the_one_policy_implementation(row, figure1, monkeypatch):
    """Each EP-SPARQL row of Table 1 (rsep.algebra.selection.TABLE1, as data): its setting
    is the row's RSEP-QL selection, and both sides of the correspondence choose SEQ^c /
    SEQ^r's right operands and consume what their outputs used by the same functions
    (recorded here with the module that called them); unrestricted does neither."""
    assert parse_epsparql(EPSPARQL, policy=row.setting).policy is row.selection
    assert row.selection.consumes == ("P^" in row.rsepql)
    selects, consumes = [], []
    real_select, real_just = selection.select, selection.justification

    def spy_select(policy, usable, interval, compatible):
        selects.append((policy, sys._getframe(1).f_globals["__name__"]))
        return real_select(policy, usable, interval, compatible)

    def spy_just(justs):
        got = real_just(justs)
        consumes.append((sys._getframe(1).f_globals["__name__"], frozenset(got)))
        return got

    monkeypatch.setattr(selection, "select", spy_select)
    monkeypatch.setattr(selection, "justification", spy_just)

    # a compiled module (rsep.native) has no Python frame to name it: the modules that
    # choose and consume through `selection` see a copy of it that records their name
    def named(module: str) -> types.SimpleNamespace:
        def sel(policy, usable, interval, compatible):
            selects.append((policy, module))
            return real_select(policy, usable, interval, compatible)

        def just(justs):
            got = real_just(justs)
            consumes.append((module, frozenset(got)))
            return got
        return types.SimpleNamespace(**{**vars(selection), "select": sel, "justification": just})

    for module in SELECTION_CALLERS:
        monkeypatch.setattr(importlib.import_module(module), "selection", named(module))
    rq = run(RSEPQL % row.selection.name, figure1)
    for e in figure1:
        e.seq = 0
    out = ep_run([EPSPARQL], figure1, policy=row.setting)
    assert sorted((o["time"], o["from"], o["to"]) for o in out) \
        == sorted((o["time"], o["from"], o["to"]) for o in rq)
    if row.selection.consumes:
        assert {p for p, _ in selects} == {row.selection}
        # EP-SPARQL's {E1} SEQ {E2} with no window runs on the indexed candidates (seqindex),
        # RSEP-QL's E_1 SEQ E_2 of two BEPs on the live ones (rsep.events.incremental): both
        # leave the choice among them to the same functions
        assert {m for _, m in selects} == {"rsep.events.incremental", "rsep.epsparql.seqindex"}
        assert {m for m, items in consumes if items} == {"rsep.events.mappings",
                                                          "rsep.epsparql.policy"}
    else:
        assert selects == [] and consumes == []
