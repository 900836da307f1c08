"""Queries 2, 4 and 5 of 002 Appendix A over small hand-made streams, expected matches written
out (Queries 1, 3 and 6 are in test_spaseq_examples.py). As printed, Query 2 reads an unbound
?s1 and selects unbound variables, Query 4 ends with a comma and Query 5 selects unbound
variables (docs/semantics.md): each is run with only that repaired."""

from __future__ import annotations

from rsep import Engine, parse_query
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.testing.snippets import ev, triples

PRED = "http://example/"
XI = "^^<http://www.w3.org/2001/XMLSchema#integer>"

QUERY2 = """PREFIX pred: <http://example/>
PREFIX : <http://creditcard.org/>
SELECT ?card ?amount1 ?amount2 ?name
WITHIN 30 MINUTES
FROM STREAM S1 <http://creditCard.org/boats>
WHERE {
  SEQ (A, B+)
  DEFINE GPM A ON S1 {
    ?card pred:id ?id1.
    ?card pred:amount ?amount1.
    ?card pred:loc ?loc.
    FILTER (?amount1 > 0)
  }
  DEFINE GPM B ON S1 {
    ?card pred:id ?id1.
    ?card pred:amount ?amount2.
    FILTER (?amount2 *10 >= ?amount1)
    GRAPH <http://creditcard.org/db> {
      ?id :cardHolder ?name.
      ?id :holderAddress ?address.
    }
  }
}"""


def test_query2_big_after_small_with_kleene_plus_and_background_kb():
    s1 = "http://creditCard.org/boats"

    def tx(t: int, card: str, amount: int, loc: bool) -> object:
        body = f"<{PRED}{card}> <{PRED}id> \"{card[-1]}\" ; <{PRED}amount> {amount} "
        return ev(s1, t, body + (f"; <{PRED}loc> <{PRED}L{card[-1]}> ." if loc else "."))

    events = [tx(1, "c1", 50, True), tx(2, "c1", 10, False), tx(3, "c1", 4, False),
              tx(4, "c2", 7, True), tx(5, "c2", 1, False), tx(6, "c2", 3, False)]
    kb = {"http://creditcard.org/db": list(triples(
        '<http://creditcard.org/acct1> <http://creditcard.org/cardHolder> "Ann" ; '
        '<http://creditcard.org/holderAddress> "Main St" .'))}
    eng = Engine(time_unit_ms=60_000)
    eng.add_graph("http://creditcard.org/db", kb["http://creditcard.org/db"])
    eng.register(QUERY2)
    outs = [(o.time, o.start, o.bindings) for o in eng.run(events)]
    # c1: 10 * 10 >= 50 at 2, then 4 * 10 < 50 ends the contiguous B's. c2: 1 * 10 >= 7 at 5
    # and 3 * 10 >= 7 at 6 (each iteration binds ?amount2 afresh; the last one is output).
    card = {"c1": f"<{PRED}c1>", "c2": f"<{PRED}c2>"}
    assert outs == [
        (2, 1, {"card": card["c1"], "amount1": f'"50"{XI}', "amount2": f'"10"{XI}',
                "name": '"Ann"'}),
        (5, 4, {"card": card["c2"], "amount1": f'"7"{XI}', "amount2": f'"1"{XI}',
                "name": '"Ann"'}),
        (6, 4, {"card": card["c2"], "amount1": f'"7"{XI}', "amount2": f'"3"{XI}',
                "name": '"Ann"'}),
    ]
    ref = ReferenceEvaluator(parse_query(QUERY2), events, kb)
    assert [(m.time, [t for t, _ in m.steps]) for m in ref.evaluate(1, 30)] == [
        (2, [1, 2]), (5, [4, 5]), (6, [4, 5, 6])]


QUERY4 = """PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2 ?p3 ?vol1 ?vol2 ?vol3
WITHIN 60 MINUTES
FROM STREAM S1 <http://stockmarket.org/stocks/google>
WHERE {
  SEQ (A, B, C)
  DEFINE GPM A ON S1 { ?company pred:price ?p1. ?company pred:volume ?vol1. }
  DEFINE GPM B ON S1 { ?company pred:price ?p2. ?company pred:volume ?vol2. FILTER (?p2 > ?p1) }
  DEFINE GPM C ON S1 { ?company pred:price ?p3. ?company pred:volume ?vol3. FILTER (?p3 < ?p2 ). }
}"""


def stock(t: int, company: str, price: int) -> object:
    return ev("http://stockmarket.org/stocks/google", t,
              f"<{PRED}{company}> <{PRED}price> {price} ; <{PRED}volume> {100 + t} .")


def test_query4_v_shape_under_strict_contiguity():
    # c1: 10 20 15 is a V at 1-3; 15 30 then c2's event at 5 breaks contiguity for c1.
    events = [stock(1, "c1", 10), stock(2, "c1", 20), stock(3, "c1", 15), stock(4, "c1", 30),
              stock(5, "c2", 40), stock(6, "c1", 20)]
    eng = Engine(time_unit_ms=60_000)
    eng.register(QUERY4)
    outs = [(o.time, o.start, o.bindings) for o in eng.run(events)]
    assert outs == [(3, 1, {"company": f"<{PRED}c1>", "p1": f'"10"{XI}', "p2": f'"20"{XI}',
                            "p3": f'"15"{XI}', "vol1": f'"101"{XI}', "vol2": f'"102"{XI}',
                            "vol3": f'"103"{XI}'})]
    ref = ReferenceEvaluator(parse_query(QUERY4), events)
    assert [(m.time, m.first) for m in ref.evaluate(1, 60)] == [(3, 1)]
    # Skip-till-next instead: 20 (at 2) and 15 (at 3) each first rise to 30 at 4, which
    # first falls to 20 at 6, over c2's event at 5.
    nxt = QUERY4.replace("SEQ (A, B, C)", "SEQ (A; B; C)")
    eng = Engine(time_unit_ms=60_000)
    eng.register(nxt)
    assert [(o.time, o.start) for o in eng.run(events)] == [(3, 1), (6, 2), (6, 3)]


QUERY5 = """PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
PREFIX sao: <http://purl.oclc.org/NET/sao/ssn#>
SELECT ?p1 ?v1 ?v2 ?v3
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


def test_query5_conjunction_after_skip_till_next():
    base = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
    s1, s2, s3 = base + "182955", base + "195578", base + "195446"
    ssn, sao = "http://purl.oclc.org/NET/ssnx/ssn#", "http://purl.oclc.org/NET/sao/ssn#"

    def obs(stream: str, t: int, value: int) -> object:
        return ev(stream, t, f"<{PRED}seg1> <{ssn}observedProperty> <{PRED}speed> ; "
                             f"<{sao}hasValue> {value} .")

    events = [obs(s1, 1, 5), obs(s2, 2, 6),  # B alone at 2: the conjunction waits
              obs(s2, 3, 7), obs(s3, 3, 8),  # B & C at 3: a match
              obs(s1, 4, 10), obs(s2, 5, 12), obs(s3, 5, 11),  # 11 < 12: C fails at 5
              obs(s2, 6, 12), obs(s3, 6, 13)]  # ... and holds at 6
    eng = Engine(time_unit_ms=60_000)
    eng.register(QUERY5)
    outs = [(o.time, o.start, o.bindings) for o in eng.run(events)]
    speed = f"<{PRED}speed>"
    assert outs == [
        (3, 1, {"p1": speed, "v1": f'"5"{XI}', "v2": f'"7"{XI}', "v3": f'"8"{XI}'}),
        (6, 4, {"p1": speed, "v1": f'"10"{XI}', "v2": f'"12"{XI}', "v3": f'"13"{XI}'}),
    ]
    ref = ReferenceEvaluator(parse_query(QUERY5), events)
    assert [(m.time, m.first) for m in ref.evaluate(1, 30)] == [(3, 1), (6, 4)]
