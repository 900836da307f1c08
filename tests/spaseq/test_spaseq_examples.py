"""SPASEQ (002): the paper's worked examples, Query 1, and the NFA_scep runs of Examples 12 and 14.

Each example is checked twice: with the reference evaluator on the expression
and time boundaries the example states, and with the NFA_scep engine through
the engine, as a query whose first tumbling window is those boundaries. Where
a printed table contradicts the definitions, the expected rows are the
definitions' and the test says which row was corrected (docs/semantics.md,
"SPASEQ").
"""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest

from rsep import Engine, QueryError, parse_query
from rsep.cli.main import main
from rsep.spaseq.automaton import compile_query
from rsep.spaseq.explain import explain
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams
from rsep.testing.snippets import EX, ROOT, ev, short, triples

U1, U2 = EX + "u1", EX + "u2"
KB = EX + "kb"
P1 = "{ ?h :pow ?p . ?h :loc ?l }"
P2 = "{ ?w :value ?v . ?w :loc ?l }"
P1_KB = "{ ?h :pow ?p . ?h :loc ?l . GRAPH <http://example.org/kb> { ?h :owner ?n . ?h :address ?a } }"


def spaseq(seq: str, *, p1: str = P1, p2: str = P2, within: str = "", select: str = "*") -> str:
    defs = f"DEFINE GPM P1 ON S1 {p1}\n"
    if "P2" in seq:
        defs += f"DEFINE GPM P2 ON S2 {p2}\n"
    return (f"PREFIX : <{EX}>\nSELECT {select} {within}\nFROM STREAM S1 <{U1}>\n"
            f"FROM STREAM S2 <{U2}>\nWHERE {{\n SEQ ({seq})\n{defs}}}")


def rows(pairs) -> list[tuple]:
    """(time, {var: short term}) for each solution of each (time, Omega), sorted."""
    out = []
    for t, omega in pairs:
        for mu in omega:
            out.append((t, {k: short(str(v)) for k, v in sorted(mu)}))
    return sorted(out, key=lambda r: (r[0], sorted(r[1].items())))


def reference(text: str, events, tb: int, te: int, graphs=None) -> list[tuple]:
    q = parse_query(text)
    ref = ReferenceEvaluator(q, events, graphs)
    return rows((m.time, m.omega) for m in ref.expression(q.seq, tb, te))


def engine(text: str, events, tb: int, te: int, graphs=None) -> list[tuple]:
    """The NFA_scep engine's outputs for window [tb, te]: WITHIN te - tb, issued at tb."""
    q = parse_query(text.replace("SELECT * ", f"SELECT * WITHIN {te - tb} "))
    q.issued_at = tb
    eng = Engine()
    for iri, triple_list in (graphs or {}).items():
        eng.add_graph(iri, triple_list)
    eng.register(q)
    outs = [o for o in eng.run(sorted(events, key=lambda e: e.time)) if o.start >= tb and o.time <= te]
    return sorted(((o.time, {k: short(v) for k, v in sorted(o.bindings.items())}) for o in outs),
                  key=lambda r: (r[0], sorted(r[1].items())))


def both(text: str, events, tb: int, te: int, graphs=None) -> list[tuple]:
    got = reference(text, events, tb, te, graphs)
    assert engine(text, events, tb, te, graphs) == got
    return got


def row(t: int, **b: str) -> tuple:
    return (t, dict(sorted(b.items())))


# ---------------------------------------------------------------- Sec. 5 examples


def test_example3_gpm_evaluation_over_5_15():
    s1 = [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
          ev(U1, 15, ":H2 :pow :Pw2 . :H2 :loc :L2 ."),
          ev(U1, 25, ":H3 :pow :Pw3 . :H3 :loc :L3 .")]
    q = parse_query(spaseq("P1"))
    ref = ReferenceEvaluator(q, s1)
    assert rows(ref.gpm_expression(q.gpms["P1"], 5, 15)) == [
        row(10, h=":H1", p=":Pw1", l=":L1"),
        row(15, h=":H2", p=":Pw2", l=":L2"),
    ]
    assert both(spaseq("P1"), s1, 5, 15) == rows(ref.gpm_expression(q.gpms["P1"], 5, 15))


def example4_streams() -> list:
    return [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
            ev(U1, 25, ":H2 :pow :Pw2 . :H2 :loc :L2 ."),
            ev(U2, 10, ":W1 :value :V11 . :W1 :loc :L1 ."),
            ev(U2, 20, ":W2 :value :V12 . :W2 :loc :L1 .")]


def test_example4_conjunction_pairs_equal_timestamps():
    assert both(spaseq("(P1 & P2)"), example4_streams(), 10, 25) == [
        row(10, h=":H1", p=":Pw1", l=":L1", w=":W1", v=":V11"),
    ]


def test_example5_disjunction_without_the_row_at_15():
    # 002 prints a fifth row (15, :L1, :W1, :V11): Example 4's streams have no event at 15.
    assert both(spaseq("(P1 | P2)"), example4_streams(), 10, 25) == [
        row(10, h=":H1", p=":Pw1", l=":L1"),
        row(10, l=":L1", w=":W1", v=":V11"),
        row(20, l=":L1", w=":W2", v=":V12"),
        row(25, h=":H2", p=":Pw2", l=":L2"),
    ]


def example6_streams() -> list:
    return [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
            ev(U1, 15, ":H2 :pow :Pw2 . :H2 :loc :L1 ."),
            ev(U2, 15, ":W1 :value :V11 . :W1 :loc :L2 ."),
            ev(U2, 20, ":W1 :value :V11 . :W1 :loc :L1 ."),
            ev(U2, 25, ":W2 :value :V12 . :W2 :loc :L1 .")]


def test_example6_skip_till_any_pairs_every_later_event():
    # 002's fourth row reads (25, :H2, :Pw2, L1, :W1, :V11); the event at 25 is :W2 :V12.
    assert both(spaseq("P1: P2"), example6_streams(), 10, 25) == [
        row(20, h=":H1", p=":Pw1", l=":L1", w=":W1", v=":V11"),
        row(20, h=":H2", p=":Pw2", l=":L1", w=":W1", v=":V11"),
        row(25, h=":H1", p=":Pw1", l=":L1", w=":W2", v=":V12"),
        row(25, h=":H2", p=":Pw2", l=":L1", w=":W2", v=":V12"),
    ]


def test_example7_skip_till_next_takes_the_first_joining_event():
    assert both(spaseq("P1; P2"), example6_streams(), 10, 25) == [
        row(20, h=":H1", p=":Pw1", l=":L1", w=":W1", v=":V11"),
        row(20, h=":H2", p=":Pw2", l=":L1", w=":W1", v=":V11"),
    ]


def test_example8_strict_contiguity_over_the_streamset():
    # :H1 at 10 is followed (at 15) by :W1 at :L2, which does not join: no match for it.
    assert both(spaseq("P1, P2"), example6_streams(), 10, 25) == [
        row(20, h=":H2", p=":Pw2", l=":L1", w=":W1", v=":V11"),
    ]


def test_example9_kleene_plus_exposes_the_last_iteration():
    events = [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
              ev(U1, 25, ":H2 :pow :Pw2 . :H2 :loc :L2 ."),
              ev(U2, 15, ":W1 :value :V11 . :W1 :loc :L1 ."),
              ev(U2, 20, ":W2 :value :V12 . :W2 :loc :L1 .")]
    assert both(spaseq("P1; P2+"), events, 10, 20) == [
        row(15, h=":H1", p=":Pw1", l=":L1", w=":W1", v=":V11"),
        row(20, h=":H1", p=":Pw1", l=":L1", w=":W2", v=":V12"),
    ]
    # The match at 20 took both weather events; every iteration is in the output.
    q = parse_query(spaseq("P1; P2+", within="WITHIN 10", select="?h ?w ?v"))
    q.issued_at = 10
    eng = Engine()
    eng.register(q)
    outs = [o.to_json() for o in eng.run(sorted(events, key=lambda e: e.time))]
    assert outs[1] == {
        "time": 20, "from": 10, "to": 20, "start": 10,
        "bindings": {"h": f"<{EX}H1>", "w": f"<{EX}W2>", "v": f"<{EX}V12>"},
        "iterations": {"P2": [[{"v": f"<{EX}V11>", "w": f"<{EX}W1>"}],
                              [{"v": f"<{EX}V12>", "w": f"<{EX}W2>"}]]},
    }


def test_example10_graph_operator_joins_the_background_kb():
    events = [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
              ev(U1, 25, ":H2 :pow :Pw2 . :H2 :loc :L2 .")]
    kb = {KB: list(triples(":H1 :owner :john . :H1 :address :paris . "
                           ":H2 :owner :smith . :H2 :address :lyon ."))}
    text = spaseq("P1", p1=P1_KB)
    q = parse_query(text)
    ref = ReferenceEvaluator(q, events, kb)
    expected = [row(10, h=":H1", p=":Pw1", l=":L1", n=":john", a=":paris")]
    assert rows(ref.gpm_expression(q.gpms["P1"], 10, 20)) == expected
    assert both(text, events, 10, 20, kb) == expected


def example11_streams() -> list:
    return [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
            ev(U1, 25, ":H2 :pow :Pw2 . :H2 :loc :L2 ."),
            ev(U2, 15, ":W1 :value :V11 . :W1 :loc :L1 ."),
            ev(U2, 40, ":W2 :value :V12 . :W2 :loc :L2 .")]


def test_example11_query_issued_at_20():
    # Q = ({?h, ?p, ?v}, 50, (u1,P1) ; (u2,P2)) issued at 20: the windows are [20, 70],
    # [70, 120], ... so the events at 10 and 15 are in none. 002 prints (15, :H1, :Pw1,
    # :V11), which needs the query issued at 10 or before (then (40, ...) is an answer too).
    text = spaseq("P1; P2", within="WITHIN 50", select="?h ?p ?v")
    q = parse_query(text)
    ref = ReferenceEvaluator(q, example11_streams())
    assert rows(ref.answers(20, 50)) == [row(40, h=":H2", p=":Pw2", v=":V12")]
    assert rows(ref.answers(10, 50)) == [row(15, h=":H1", p=":Pw1", v=":V11"),
                                         row(40, h=":H2", p=":Pw2", v=":V12")]
    for issued, expected in ((20, [(40, 25)]), (10, [(15, 10), (40, 25)])):
        q = parse_query(text)
        q.issued_at = issued
        eng = Engine()
        eng.register(q)
        events = sorted(example11_streams(), key=lambda e: e.time)
        assert [(o.time, o.start) for o in eng.run(events)] == expected


# ---------------------------------------------------------------- Sec. 6: NFA_scep

Q1 = ROOT / "tests" / "data" / "spaseq" / "query1.rq"


def test_example12_compiled_nfa_of_seq_a_bplus_c():
    q = parse_query(Q1.read_text().replace("SEQ (A; B+, C)", "SEQ (A, B+, C)"))
    nfa = compile_query(q)
    assert [(s.name, s.kind) for s in nfa.states] == [
        ("x0", "initial"), ("x1", "ordinary"), ("x2", "ordinary"), ("xf", "final")]
    names = {iri: n for n, iri in q.streams.items()}
    edges = [(e.src, e.dst, e.theta.render(names), e.role) for s in nfa.states for e in s.edges]
    assert edges == [
        (0, 1, "({S1}, ∅, A)", "proceed"),
        (1, 1, "({S2}, +, B)", "take"),
        (1, 2, "({S2}, +, B)", "proceed"),
        (2, 3, "({S3}, ∅, C)", "proceed"),
    ]
    text = explain(q)
    assert "x1 -> x1  ({S2}, +, B)  take" in text and "x2 -> xf  ({S3}, ∅, C)" in text
    assert "run index by value of: ?l" in text
    assert "partition key: none (strict contiguity (',') is over the whole streamset" in text
    dot = explain(q, "dot")
    assert 'x1 -> x2 [label="({S2}, +, B)"];' in dot and "xf [shape=doublecircle];" in dot


def example14(seq: str) -> tuple[list, list]:
    q = parse_query(f"""PREFIX : <{EX}> SELECT * FROM STREAM S1 <{EX}s1> FROM STREAM S2 <{EX}s2>
        FROM STREAM S3 <{EX}s3> WHERE {{ SEQ ({seq})
        DEFINE GPM A ON S1 {{ ?a a :A }} DEFINE GPM B ON S2 {{ ?b a :B }}
        DEFINE GPM C ON S3 {{ ?c a :C }} }}""")
    trace: list = []
    q.options["trace"] = trace
    eng = Engine()
    eng.register(q)
    events = [ev(EX + "s1", 1, ":G1 a :A ."), ev(EX + "s2", 2, ":G2 a :B ."),
              ev(EX + "s3", 3, ":G3 a :C ."), ev(EX + "s2", 4, ":G4 a :B ."),
              ev(EX + "s3", 5, ":G5 a :C .")]
    outs = [(o.time, [t for _, _, t in o.events]) for o in eng.run(events)]
    return outs, trace


def test_example14_runs_of_seq_a_bplus_c():
    outs, trace = example14("A, B+, C")
    # G1 starts r1 in x1; G2 matches B: r1 stays in x1 (one iteration) and its clone r2
    # moves to x2; G3 matches C: r2 reaches x_f with G1, G2, G3, and r1, whose next B
    # had to follow G2 immediately, is deleted.
    assert trace == [
        ("new", 1, "x1", 1),
        ("stay", 1, "x1", 2), ("clone", 1, 2, "x2"),
        ("match", 2, ((1, 1), (2, 2), (3, 3))),
        ("delete", 1, "contiguity", 3), ("delete", 2, "done", 3),
    ]
    assert outs == [(3, [1, 2, 3])]


def test_example14_skip_till_any_keeps_r1_for_g4_g5():
    # 002's narrative (r1 stays active and later matches G1, G4, G5) is what SEQ(A: B+, C) does.
    outs, trace = example14("A: B+, C")
    assert outs == [(3, [1, 2, 3]), (5, [1, 4, 5])]
    assert ("match", 3, ((1, 1), (2, 2), (3, 3))) in trace
    assert ("match", 5, ((1, 1), (4, 2), (5, 3))) in trace
    assert not any(e[0] == "delete" and e[1] == 1 for e in trace)


# ---------------------------------------------------------------- Query 1

DATA = ROOT / "tests" / "data" / "spaseq"
STREAMS = {"http://smartgrid.org/mainSource": DATA / "power.trig",
           "http://smartgrid.org/weather": DATA / "weather.trig",
           "http://smartgrid.org/storageSource": DATA / "storage.trig"}
SG = "http://smartgrid.org/"
XI = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def q1_answer(fr1: int, fr2: int) -> dict:
    return {"house": f"<{SG}H1>", "fr1": f'"{fr1}"{XI}', "fr2": f'"{fr2}"{XI}',
            "house2": f"<{SG}H2>", "city": f"<{SG}Lyon>", "oname": '"Alice"'}


def query1_engine(text: str) -> list[dict]:
    eng = Engine(time_unit_ms=60_000)
    eng.add_graph(SG + "db", DATA / "homes.ttl")
    eng.register(text)
    files = [StreamFile(p, iri) for iri, p in STREAMS.items()]
    return [o.to_json() for o in eng.run(merge_streams(files, DeadLetter()))]


def test_query1_smart_grid_matches():
    # H1's fuel price at 1 (25) is followed by favourable weather at L1 (3 and 5, contiguous),
    # then at once by solar storage at L1 cheaper than 25 (6). H2 (12) finds weather at L2
    # (14), but the storage that follows (15) costs more. H2's price at 25 has its weather at
    # 31, in the next 30-minute window. H1 again at 40, 42, 43 in the second window.
    assert query1_engine(Q1.read_text()) == [
        {"time": 6, "from": 1, "to": 6, "start": 1, "bindings": q1_answer(25, 20)},
        {"time": 43, "from": 40, "to": 43, "start": 40, "bindings": q1_answer(22, 10)},
    ]


def test_query1_kleene_iterations_and_reference_agree():
    text = Q1.read_text().replace("SELECT ?house ?fr1 ?fr2 ?house2 ?city ?oname",
                                  "SELECT ?house ?lt")
    out = query1_engine(text)
    assert out[0]["iterations"] == {"B": [[{"lt": f'"50"{XI}'}], [{"lt": f'"60"{XI}'}]]}
    assert out[0]["bindings"] == {"house": f"<{SG}H1>", "lt": f'"60"{XI}'}
    # The reference evaluator (Def. 16, issued at the first event, 30-minute windows) agrees.
    q = parse_query(Q1.read_text())
    events = [e for iri, p in STREAMS.items() for e in StreamFile(p, iri)]
    kb = {SG + "db": [x.triple for x in ox.parse(path=str(DATA / "homes.ttl"))]}
    got = ReferenceEvaluator(q, events, kb).answers(1, 30)
    assert sorted((t, {k: str(v) for k, v in mu}) for t, om in got for mu in om) == [
        (6, q1_answer(25, 20)), (43, q1_answer(22, 10))]


def test_query1_cli_end_to_end(capsys):
    args = ["run", str(Q1), "--graph", f"{SG}db={DATA / 'homes.ttl'}", "--time-unit", "1m"]
    for iri, p in STREAMS.items():
        args += ["--stream", f"{iri}={p}"]
    assert main(args) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert out == [{"time": 6, "from": 1, "to": 6, "start": 1, "bindings": q1_answer(25, 20)},
                   {"time": 43, "from": 40, "to": 43, "start": 40, "bindings": q1_answer(22, 10)}]


# ---------------------------------------------------------------- Appendix A

PRED = "http://example/"


def stock(t: int, company: str, price: int, volume: int) -> object:
    return ev("http://stockmarket.org/stocks/google", t,
              f"<{PRED}{company}> <{PRED}price> {price} . <{PRED}{company}> <{PRED}volume> {volume} .")


def test_query3_head_and_shoulders():
    # c1 traces a head and shoulders at 1-7 (10 20 15 30 18 25 20); at 8-14 the same shape
    # ends at 26, above the right shoulder's 25: no match. Strict contiguity: no other start
    # fits (e.g. from 3: 15 30 18, then 25 is not above 30).
    prices = [10, 20, 15, 30, 18, 25, 20, 10, 20, 15, 30, 18, 25, 26]
    events = [stock(t, "c1", p, 100 + t) for t, p in enumerate(prices, 1)]
    text = (DATA / "query3.rq").read_text()
    eng = Engine(time_unit_ms=60_000)
    eng.register(text)
    outs = [o.to_json() for o in eng.run(events)]
    expected = {"company": f"<{PRED}c1>",
                **{f"p{i}": f'"{p}"{XI}' for i, p in enumerate(prices[:7], 1)},
                **{f"vol{i}": f'"{100 + i}"{XI}' for i in range(1, 8)}}
    assert outs == [{"time": 7, "from": 1, "to": 7, "start": 1, "bindings": expected}]
    ref = ReferenceEvaluator(parse_query(text), events)
    assert [(m.time, m.first) for m in ref.evaluate(1, 60)] == [(7, 1)]


def test_query6_trajectory_with_background_kb():
    boats = "http://harbour.org/boats"
    h = "http://harbour.org/"

    def boat(t: int, v: str, speed: int, loc: str, direction: str) -> object:
        return ev(boats, t, f'<{h}{v}> <{PRED}speed> {speed} . <{h}{v}> <{PRED}location> "{loc}" . '
                            f"<{h}{v}> <{PRED}direction> <{h}{direction}> .")

    events = [boat(1, "V1", 5, "harbour", "N"), boat(2, "V1", 8, "sea", "N"),
              boat(3, "V1", 9, "sea", "N"), boat(4, "V1", 0, "fishingarea", "E"),
              # V2 leaves the harbour, but slows down: no B, and the next event must be one
              boat(5, "V2", 4, "harbour", "S"), boat(6, "V2", 3, "sea", "S"),
              boat(7, "V2", 0, "fishingarea", "S")]
    kb = {h + "db": list(triples(f"<{h}V1> <{h}name> \"Nemo\" ; <{h}operatedBy> <{h}acme> . "
                                 f"<{h}acme> <{h}name> \"Acme Fishing\" ."))}
    eng = Engine(time_unit_ms=60_000)
    for iri, ts in kb.items():
        eng.add_graph(iri, ts)
    text = (DATA / "query6.rq").read_text()
    eng.register(text)
    outs = [(o.time, o.start, [t for _, _, t in o.events], o.bindings) for o in eng.run(events)]
    assert outs == [(4, 1, [1, 2, 3, 4], {"vessel": f"<{h}V1>", "n": '"Nemo"',
                                          "cname": '"Acme Fishing"'})]
    ref = ReferenceEvaluator(parse_query(text), events, kb)
    assert [(m.time, [t for t, _ in m.steps]) for m in ref.evaluate(1, 30)] == [(4, [1, 2, 3, 4])]


def test_queries_2_and_5_as_printed_select_variables_no_gpm_binds():
    q5 = """PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
PREFIX sao: <http://purl.oclc.org/NET/sao/ssn#>
SELECT ?vessel ?n ?cname
WITHIN 30 MINUTES
FROM STREAM S1 <http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData182955>
FROM STREAM S2 <http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData195578>
FROM STREAM S3 <http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData195446>
WHERE {
  SEQ (A; (B&C))
  DEFINE GPM A ON S1 { ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v1. FILTER (?v1 > 3) }
  DEFINE GPM B ON S2 { ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v2. FILTER (?v2 >= ?v1) }
  DEFINE GPM C ON S3 { ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v3. FILTER (?v3 >= ?v2) }
}"""
    with pytest.raises(QueryError, match=r"\?vessel is selected but no GPM binds it"):
        parse_query(q5)
    fixed = parse_query(q5.replace("SELECT ?vessel ?n ?cname", "SELECT ?p1 ?v1 ?v2 ?v3"))
    assert fixed.seq.render() == "A; (B & C)"
    # C's FILTER reads B's ?v2: conjuncts are evaluated left to right.
    assert fixed.gpms["C"].stateful_filters == ("(?v3 >= ?v2)",)
    q2_filter = """PREFIX pred: <http://example/>
SELECT ?card WITHIN 30 MINUTES FROM STREAM S1 <http://creditCard.org/boats>
WHERE { SEQ (A, B+)
  DEFINE GPM A ON S1 { ?card pred:id ?id1. ?card pred:amount ?amount1. ?card pred:loc ?loc.
                       FILTER (?s1 > 0) }
  DEFINE GPM B ON S1 { ?card pred:id ?id1. ?card pred:amount ?amount2.
                       FILTER (?amount2 *10 >= ?amount1) } }"""
    with pytest.raises(QueryError, match=r"\?s1 is used in a FILTER of GPM A"):
        parse_query(q2_filter)
