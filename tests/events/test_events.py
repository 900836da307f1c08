"""RSEP-QL event patterns (000 Sec. 3.3-4.4): Examples 7-11 and the claims of Sec. 2 / Table 1."""

from __future__ import annotations

import pytest

from rsep import QueryError, parse_query
from rsep.algebra.events import Selection
from rsep.algebra.window import WindowKind
from rsep.events import reference as events_reference
from rsep.events.solver import solve_item
from rsep.runtime import windowed
from rsep.testing.snippets import EX, ev, run, short, table
from rsep.windows import reference
from rsep.windows.resolved import Window

# Example 3: W1 = landmark from 1 (Example 4's query text says [LND 9]; Example 3 and
# Examples 7-11 use t0 = 1: see docs/semantics.md), W2 = [RANGE 5] (5, 1).
EXAMPLE4 = """PREFIX : <http://example.org/>
REGISTER {r2s} :out AS
SELECT {proj}
FROM NAMED :S WIN [LND 1] AS :w_1
FROM NAMED :S WIN [RANGE 5] AS :w_2
EVENT ON :w_1 {{ ?x :p ?y . }} AS E_1
EVENT ON :w_2 {{ ?y :q ?z . }} AS E_2
WHERE {{ MATCH {policy} {{ E_1 SEQ E_2 }} }}"""


def example4(policy: str = "", r2s: str = "RSTREAM", proj: str = "?x ?y ?z ?_from ?_to") -> str:
    return EXAMPLE4.format(policy=policy, r2s=r2s, proj=proj)


def mappings(found) -> list[tuple]:
    return sorted((tuple(short(v) for _, v in m.mu), m.t1, m.t2) for m in found)


def evaluate_at(t: int, figure1, selection: Selection, which: str = "seq"):
    q = parse_query(example4())
    m = q.matches[0]
    wins = {"http://example.org/w_1": Window(WindowKind.LANDMARK, t0=1),
            "http://example.org/w_2": Window(WindowKind.TIME, alpha=5, beta=1)}
    contents = {iri: reference.content(w, figure1, t) for iri, w in wins.items()}
    for i, e in enumerate(figure1, 1):
        e.seq = i
    ctx = events_reference.Context(contents, lambda bep, item, trs: solve_item(bep, trs))
    expr = m.expr if which == "seq" else m.expr.right
    return events_reference.evaluate(expr, selection, ctx)


def test_example7_basic_event_pattern(figure1):
    assert mappings(evaluate_at(8, figure1, Selection.UNRESTRICTED, "E2")) == [
        ((":b1", ":c1"), 6, 6), ((":b2", ":c2"), 6, 6), ((":b2", ":c2"), 8, 8)]


def test_example8_seq(figure1):
    # The paper prints the last two as (4, 8) and (6, 8); Eq. (7) gives (t1, t4) = (4, 6), (4, 8)
    assert mappings(evaluate_at(8, figure1, Selection.UNRESTRICTED)) == [
        ((":a1", ":b1", ":c1"), 2, 6), ((":a2", ":b2", ":c2"), 4, 6), ((":a2", ":b2", ":c2"), 4, 8)]


def test_example10_selection_policies(figure1):
    assert mappings(evaluate_at(8, figure1, Selection.NAIVE)) == [((":a2", ":b2", ":c2"), 4, 8)]
    assert mappings(evaluate_at(8, figure1, Selection.CHRONOLOGICAL)) == [
        ((":a1", ":b1", ":c1"), 2, 6), ((":a2", ":b2", ":c2"), 4, 6)]
    assert mappings(evaluate_at(8, figure1, Selection.RECENT)) == [
        ((":a1", ":b1", ":c1"), 2, 6), ((":a2", ":b2", ":c2"), 4, 8)]


def events_out(out) -> list[tuple]:
    return sorted((o["time"], short(o["bindings"]["x"]), short(o["bindings"]["z"]), o["from"], o["to"])
                  for o in out)


def test_example9_match_drops_time_annotations(figure1):
    out = run(example4(proj="?x ?y ?z"), figure1, report=_at(8))
    # a bag: (a2, b2, c2) is justified twice, by (4, 6) and (4, 8)
    assert table(out) == [(8, {"x": ":a1", "y": ":b1", "z": ":c1"}),
                          (8, {"x": ":a2", "y": ":b2", "z": ":c2"}),
                          (8, {"x": ":a2", "y": ":b2", "z": ":c2"})]


def _at(*ts):
    from rsep import ReportPolicy

    return ReportPolicy(at=ts)


def test_example11_chronological_consumption(figure1):
    out = run(example4("CHRONOLOGICAL"), figure1, report=_at(8, 10))
    assert events_out(out) == [(8, ":a1", ":c1", 2, 6), (8, ":a2", ":c2", 4, 6)]


def test_section2_unrestricted_chronological_recent(figure1):
    """Figure 1's table: evaluations at 8 and 10, outputs as soon as available (ISTREAM)."""
    got = {p: events_out(run(example4(p, "ISTREAM"), figure1, report=_at(8, 10)))
           for p in ("UNRESTRICTED", "CHRONOLOGICAL", "RECENT")}
    assert got["UNRESTRICTED"] == [(8, ":a1", ":c1", 2, 6), (8, ":a2", ":c2", 4, 6),
                                   (8, ":a2", ":c2", 4, 8), (10, ":a1", ":c1", 2, 10)]
    assert got["CHRONOLOGICAL"] == [(8, ":a1", ":c1", 2, 6), (8, ":a2", ":c2", 4, 6)]
    # Figure 1's prose says "e2 and e3"; Example 10's SEQ^r (followed here) gives e1 and e3
    assert got["RECENT"] == [(8, ":a1", ":c1", 2, 6), (8, ":a2", ":c2", 4, 8)]


def test_section2_naive_over_a_time_window(figure1):
    """C-SPARQL's sequencing (Table 1: W^tau + SEQ^n), window of 7 sliding by 1: e3 at 8, nothing at 10."""
    q = example4("NAIVE").replace("[LND 1]", "[RANGE 7]").replace("[RANGE 5]", "[RANGE 7]")
    assert events_out(run(q, figure1, report=_at(8, 10))) == [(8, ":a2", ":c2", 4, 8)]


def test_on_every_arrival_by_default(figure1):
    q = parse_query(example4())
    assert q.report.on_arrival and not q.report.window_close
    out = run(example4("", "ISTREAM"), figure1)
    assert sorted({o["time"] for o in out}) == [6, 8, 10]


def test_events_on_two_streams_joined_with_a_window_and_background():
    """Sec. 5: E1 and E2 on different streams (neither EP-SPARQL nor C-SPARQL can say it),
    with a WINDOW pattern and a background graph in the same WHERE."""
    a, b = EX + "A", EX + "B"
    events = [ev(a, 1, ":u1 :posts :m1 ."), ev(b, 2, ":u2 :mentions :u9 ."), ev(b, 3, ":u9 :follows :u1 ."),
              ev(b, 4, ":u3 :mentions :u9 ."), ev(a, 5, ":u4 :posts :m2 ."), ev(b, 6, ":u9 :follows :u4 .")]
    q = f"""PREFIX : <{EX}>
REGISTER ISTREAM :popular AS
SELECT ?poster ?star (COUNT(?fan) AS ?mentions) ?followers
FROM <http://bg>
FROM NAMED :A WIN [RANGE 10] AS :posts
FROM NAMED :B WIN [RANGE 10] AS :follows
FROM NAMED :B WIN [RANGE 3] AS :recent
EVENT ON :posts {{ ?poster :posts ?msg . }} AS Post
EVENT ON :follows {{ ?star :follows ?poster . }} AS Follow
WHERE {{
  MATCH {{ Post SEQ Follow }}
  WINDOW :recent {{ ?fan :mentions ?star }}
  ?star :followers ?followers . FILTER (?followers > 1000)
}} GROUP BY ?poster ?star ?followers"""
    out = run(q, events, graphs={"http://bg": ":u9 :followers 5000 ."})
    row = {"followers": "5000", "star": ":u9"}
    # ISTREAM: a row is output when it holds and did not at the previous evaluation
    assert table(out) == [(3, {**row, "mentions": "1", "poster": ":u1"}),
                          (4, {**row, "mentions": "2", "poster": ":u1"}),  # u2 and u3 in (1, 4]
                          (5, {**row, "mentions": "1", "poster": ":u1"}),  # u2 left (2, 5]
                          (6, {**row, "mentions": "1", "poster": ":u4"})]


def test_event_errors_are_located():
    with pytest.raises(QueryError, match="no event named E_3") as e:
        parse_query(example4().replace("E_1 SEQ E_2", "E_1 SEQ E_3"))
    assert e.value.line == 8
    with pytest.raises(QueryError, match="EVENT ON <http://example.org/w_9>: no window"):
        parse_query(example4().replace("EVENT ON :w_1", "EVENT ON :w_9"))
    with pytest.raises(QueryError, match="basic graph pattern"):
        parse_query(example4().replace("{ ?x :p ?y . }", "{ ?x :p ?y . OPTIONAL { ?y :r ?w } }"))


ALARMS = [(1, ":s1 :alarm 1 ."), (3, ":s1 :reset 1 ."), (10, ":s2 :reset 1 ."), (12, ":s2 :alarm 1 ."),
          (20, ":s3 :alarm 2 ."), (21, ":s3 :reset 2 .")]


def test_naive_behaves_as_csparql_timestamp_sequencing():
    """Table 1: W^tau + SEQ^n is C-SPARQL's timestamp() sequencing. C-SPARQL's windows are
    [c-7, c) at c, RSP-QL's (t-7, t] at t: with integer time the same content at t = c - 1."""
    s = EX + "S"
    events = [ev(s, t, ttl) for t, ttl in ALARMS]
    csparql = f"""REGISTER QUERY seq AS PREFIX : <{EX}>
SELECT ?s FROM STREAM <{s}> [RANGE 7 STEP 1]
WHERE {{ ?s :alarm ?a . ?s :reset ?r FILTER (timestamp(?s, :alarm, ?a) < timestamp(?s, :reset, ?r)) }}"""
    naive = f"""PREFIX : <{EX}>
SELECT ?s FROM NAMED WINDOW :w ON :S [RANGE 7 STEP 1]
EVENT ON :w {{ ?s :alarm ?a }} AS Alarm
EVENT ON :w {{ ?s :reset ?r }} AS Reset
WHERE {{ MATCH NAIVE {{ Alarm SEQ Reset }} }}"""
    from rsep import ReportPolicy

    cs = table(run(csparql, events, until=30))
    rs = table(run(naive, events, until=30, report=ReportPolicy(window_close=True)))
    assert cs == [(t + 1, b) for t, b in rs]
    assert [t for t, _ in cs] == [4, 5, 6, 7, 8, 22, 23, 24, 25, 26, 27]


def test_naive_and_csparql_differ_when_a_pattern_matches_twice(figure1):
    """Eq. (9) takes the LAST E2 of the whole window; C-SPARQL's timestamp() is per binding.
    On Figure 1 at 8 (RSP-QL window (1, 8], C-SPARQL's [2, 9) at 9) NAIVE gives e3 only,
    C-SPARQL both a1-b1-c1 and a2-b2-c2."""
    from rsep import ReportPolicy

    naive = example4("NAIVE", proj="?x ?z").replace("[LND 1]", "[RANGE 7]").replace("[RANGE 5]", "[RANGE 7]")
    csparql = f"""REGISTER QUERY seq AS PREFIX : <{EX}>
SELECT ?x ?z FROM STREAM <{EX}S> [RANGE 7 STEP 1]
WHERE {{ ?x :p ?y . ?y :q ?z FILTER (timestamp(?x, :p, ?y) < timestamp(?y, :q, ?z)) }}"""
    assert [b for t, b in table(run(naive, figure1, report=ReportPolicy(at=(8,))))] == [{"x": ":a2", "z": ":c2"}]
    assert [b for t, b in table(run(csparql, figure1, until=9)) if t == 9] == [
        {"x": ":a1", "z": ":c1"}, {"x": ":a2", "z": ":c2"}]



END_OF_INPUT = """PREFIX : <http://example.org/>
REGISTER {r2s} :out AS
SELECT ?x ?z ?_from ?_to
FROM NAMED :S WIN [RANGE 5 STEP 1] AS :w
EVENT ON :w {{ ?x :p ?y . }} AS E_1
EVENT ON :w {{ ?y :q ?z . }} AS E_2
WHERE {{ MATCH {policy} {{ E_1 SEQ E_2 }} }}"""


@pytest.mark.parametrize("policy", ["", "CHRONOLOGICAL", "RECENT"])
@pytest.mark.parametrize("report", ["window-close", "content-change", "on-arrival"])
def test_match_at_the_end_of_the_input(policy, report):
    """RSEP-QL defers no decision: each output belongs to an instant of the report policy,
    and --until runs those after the input. The last event is at 3; the match [1, 3] then
    leaves R(t): at 6, when :a1 (at 1) leaves the window (1, 6], or, under P^c / P^r, at 4
    (the next instant, at every STEP), when the output at 3 consumed it; content-change
    sees only the window's change, at 6; on-arrival (MATCH's default) has no instant after
    the input. Without --until the run ends with the last event (issue 21: the engine loop
    loses no evaluation, and the end of the input adds no report instant)."""
    from rsep.algebra.policy import ReportPolicy

    gone = {"on-arrival": None, "content-change": 6}.get(report, 4 if policy else 6)
    events = [ev(EX + "S", 1, ":a1 :p :b1 ."), ev(EX + "S", 3, ":b1 :q :c1 .")]
    rp = ReportPolicy.parse(report)
    ins = END_OF_INPUT.format(r2s="ISTREAM", policy=policy)
    dels = END_OF_INPUT.format(r2s="DSTREAM", policy=policy)
    for until in (None, 10):
        got = run(ins, events, until=until, report=rp)
        assert [(o["time"], o["from"], o["to"]) for o in got] == [(3, 1, 3)]
    row = {"x": ":a1", "z": ":c1"}
    assert table(run(dels, events, until=10, report=rp)) == ([(gone, "delete", row)] if gone else [])
    if gone:
        assert table(run(dels, events, until=gone - 1, report=rp)) == []
    assert table(run(dels, events, report=rp)) == []


@pytest.mark.parametrize("policy", ["", "CHRONOLOGICAL", "RECENT"])
def test_match_solutions_enter_through_the_tree_as_through_the_text(policy, monkeypatch):
    """A MATCH's solutions join the WHERE pattern as a VALUES node of the query's tree
    (rsep.algebra.pattern.fill_match_slots, written by to_sparql); the text path, for a
    query with no tree, replaces the slot in the text: both give the same outputs, for
    literals with escapes and language tags, typed literals, blank nodes and ?_from ?_to."""
    a, b = EX + "A", EX + "B"
    events = [ev(a, 1, ':u1 :says "a \\"q\\"\\n\\u00e9"@en .'), ev(b, 2, "_:x :follows :u1 ."),
              ev(a, 3, ':u2 :says "7"^^<http://www.w3.org/2001/XMLSchema#decimal> .'),
              ev(b, 4, ":u3 :follows :u2 ."), ev(b, 5, "_:y :follows :u2 .")]
    q = f"""PREFIX : <{EX}>
REGISTER RSTREAM :q AS
SELECT ?who ?what ?fan ?_from ?_to (STR(?what) AS ?s)
FROM NAMED :A WIN [RANGE 10] AS :said
FROM NAMED :B WIN [RANGE 10] AS :follows
EVENT ON :said {{ ?who :says ?what . }} AS Say
EVENT ON :follows {{ ?fan :follows ?who . }} AS Follow
WHERE {{ MATCH {policy} {{ Say SEQ Follow }} FILTER (BOUND(?who)) }}"""
    trees = []
    real = windowed.match_template

    def spy(query):
        got = real(query)
        trees.append(got)
        return got

    monkeypatch.setattr(windowed, "match_template", spy)
    via_tree = run(q, events)
    assert trees and all(t is not None for t in trees)
    monkeypatch.setattr(windowed, "match_template", lambda query: None)
    via_text = run(q, events)
    assert via_tree == via_text and len(via_tree) >= 2
    said = [o["bindings"] for o in via_tree]
    assert any('\\"q\\"' in o["what"] for o in said) and any(o["fan"].startswith("_:") for o in said)
