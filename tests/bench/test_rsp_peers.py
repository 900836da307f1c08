"""RSP-JS's and RSP4J's own queries, as they publish them, in rsep (issue 21, part 3).

tests/data/rsp-peers/README.md says where each query comes from and how the
results of the peers were obtained. The windows differ by convention, so the
results are compared with what each engine's windows hold:

- RSP-JS and RSP4J (yasper): a window closing at c holds ``[c-a, c)`` and is
  evaluated at the first arrival after c (only the latest closed window, and in
  RSP-JS 1.3 only when non-empty);
- rsep's RSP-QL (000 Def. 3): ``(c-a, c]``, evaluated at c.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pyoxigraph as ox
import pytest

from rsep import Engine, Event, QueryError
from rsep.algebra.policy import R2S
from rsep.algebra.window import WindowKind
from rsep.lang import parse_query
from rsep.stream.time import TimeKind
from rsep.testing.rsp4j import java_string_at
from rsep.testing.snippets import ROOT

DATA = ROOT / "tests" / "data" / "rsp-peers"
RSPJS = DATA / "rsp-js"
MANIFEST = tomllib.loads((DATA / "manifest.toml").read_text(encoding="utf-8"))
CASES = {c["name"]: c for c in json.loads((RSPJS / "cases.json").read_text())["cases"]}
RECORDED = {r["name"]: r for r in json.loads((RSPJS / "rspjs-outputs.json").read_text())["runs"]}
R = "https://rsp.js/"


def item(stream: str, t: int, s: str, p: str, o: str | ox.Literal) -> Event:
    obj = o if isinstance(o, ox.Literal) else ox.NamedNode(o)
    return Event(stream=stream, graph=f"{stream}/g{t}", start=t, end=t,
                 triples=(ox.Triple(ox.NamedNode(s), ox.NamedNode(p), obj),), kind=TimeKind.ABSTRACT,
                 origin="test:0")


def run(query: str, events: list[Event], *, graphs: dict[str, list] | None = None,
        until: int | None = None, time_unit_ms: int | None = None) -> list[dict]:
    eng = Engine(time_unit_ms=time_unit_ms)
    for iri, triples in (graphs or {}).items():
        eng.add_graph(iri, [ox.Triple(*(ox.NamedNode(x) for x in t)) for t in triples])
    eng.register(query)
    return [o.to_json() for o in eng.run(events, until=until)]


def by_time(outputs: list[dict], var: str, strip: str = "") -> dict[int, list[str]]:
    """{time: sorted values of var}, the values' IRIs shortened by removing ``strip``."""
    got: dict[int, list[str]] = defaultdict(list)
    for o in outputs:
        got[o["time"]].append(o["bindings"][var].strip("<>").removeprefix(strip))
    return {t: sorted(v, key=lambda s: (len(s), s)) for t, v in sorted(got.items())}


# ---------------------------------------------------------------- RSP-JS


def rspjs_events(case: str) -> list[Event]:
    return [item(*e) for e in CASES[case]["events"]]


def rspjs_run(case: str, query: str | None = None, **kw) -> list[dict]:
    c = CASES[case]
    static = {"default": c["static"]} if c.get("static") else None
    return run(query or (RSPJS / c["query"]).read_text(), rspjs_events(case), graphs=static, **kw)


def subjects(outputs: list[dict]) -> dict[int, list[str]]:
    return by_time(outputs, "s", R + "test_subject_")


def test_rspjs_recorded_runs_give_the_counts_its_tests_document():
    """RSP-JS itself, run on its tests' streams, gives what its tests expect (2+4+6+8, ...)."""
    for name, case in CASES.items():
        if "documented_count" in case:
            assert RECORDED[name]["rows"] == case["documented_count"], name


def test_rspjs_readme_query_in_rsep():
    """The README's query (also rsp_consumer_test's) over generate_data(10): items 0..9 at 0..9.

    RSP-JS: windows [c-10, c) for c = 2, 4, 6, 8, each evaluated at the first arrival
    after c (3, 5, 7, 9): 2+4+6+8 = 20 rows. rsep: windows (c-10, c] evaluated at
    c = 0, 2, 4, 6, 8: the item stamped c is in (it belongs to RSP-JS's next window),
    and the window closing at 0 holds item 0 (RSP-JS's [-10, 0) is empty): 1+3+5+7+9
    = 25 rows. RSP-JS cannot report the window closing at 10 (no arrival after it);
    rsep does with --until 10.
    """
    got = subjects(rspjs_run("rsp_consumer_test"))
    assert got == {c: [str(i) for i in range(c + 1)] for c in (0, 2, 4, 6, 8)}
    assert sum(map(len, got.values())) == 25
    rec = RECORDED["rsp_consumer_test"]["evaluations"]
    assert [(e["arrival"], e["open"], e["close"], len(e["bindings"])) for e in rec] == [
        (3, -8, 2, 2), (5, -6, 4, 4), (7, -4, 6, 6), (9, -2, 8, 8)]
    until = subjects(rspjs_run("rsp_consumer_test", until=10))
    assert until[10] == [str(i) for i in range(1, 10)]


def test_rspjs_static_data_query_in_rsep():
    """rsp_static_plus_window_test: the static triple joins every item; same rows as the README's."""
    got = subjects(rspjs_run("rsp_static_plus_window_test"))
    assert got == {c: [str(i) for i in range(c + 1)] for c in (0, 2, 4, 6, 8)}


def test_rspjs_two_equal_windows_in_rsep():
    """rsp_multiple_same_window_test: w1 and w2 [RANGE 10 STEP 2] on two streams with the same items.

    RSP-JS evaluates the query once per window that reports (w1's and w2's windows
    both close at 2, 4, 6, 8), so every row comes twice: 2*(2+4+6+8) = 40. rsep
    evaluates a query once per evaluation time: 1+3+5+7+9 = 25, as with one window.
    """
    out = rspjs_run("rsp_multiple_same_window_test")
    assert subjects(out) == {c: [str(i) for i in range(c + 1)] for c in (0, 2, 4, 6, 8)}
    assert RECORDED["rsp_multiple_same_window_test"]["rows"] == 40
    assert {e["window"] for e in RECORDED["rsp_multiple_same_window_test"]["evaluations"]} == {
        R + "w1", R + "w2"}


def test_rspjs_two_different_windows_in_rsep():
    """rsp_multiple_difff_window_test: w1 [RANGE 10 STEP 2] on stream1, w2 [RANGE 20 STEP 10] on stream2.

    RSP-JS joins w1's closed window with w2's *open* window [-10, 10), as filled so
    far (its getContent at the last item's time), so w2 holds items 0..t-1 at arrival
    t: 2+4+6+8 = 20 rows. In rsep (000 Def. 3) w2 is (c-20, c] at its own closes
    c = 0, 10, ...; between them it keeps (-20, 0] = {item 0}: one row at each of
    0, 2, 4, 6, 8.
    """
    out = rspjs_run("rsp_multiple_difff_window_test")
    assert subjects(out) == {c: ["0"] for c in (0, 2, 4, 6, 8)}
    assert RECORDED["rsp_multiple_difff_window_test"]["rows"] == 20


def test_rspjs_items_at_closes_and_gaps_in_rsep():
    """rsep's own streams on RSP-JS (RANGE 4 STEP 2): items stamped at closes, and a gap.

    Items at 0, 2, 4, 6, 7. RSP-JS: [-2, 2) at 4 -> {0}; [0, 4) at 6 -> {0, 2}; [2, 6)
    at 7 -> {2, 4} (nothing at 2: [-4, 0) is empty). rsep: (c-4, c] at c = 0, 2, 4, 6.

    Items at 1, 9, 12. RSP-JS at 9 reports only the latest closed window it opened,
    [0, 4) -> {1} ([-2, 2) is never reported; [2, 6) and [4, 8) were never opened),
    and at 12 [6, 10) -> {9}. rsep reports every close: 2, 4 -> {1}; 6, 8 empty;
    10 -> {9}; 12 -> {9, 12}.
    """
    assert subjects(rspjs_run("items_at_closes")) == {0: ["0"], 2: ["0", "2"], 4: ["2", "4"],
                                                      6: ["4", "6"]}
    rec = RECORDED["items_at_closes"]["evaluations"]
    assert [(e["arrival"], e["open"], e["close"], len(e["bindings"])) for e in rec] == [
        (4, -2, 2, 1), (6, 0, 4, 2), (7, 2, 6, 2)]
    assert subjects(rspjs_run("gap")) == {2: ["1"], 4: ["1"], 10: ["9"], 12: ["9", "12"]}
    rec = RECORDED["gap"]["evaluations"]
    assert [(e["arrival"], e["open"], e["close"], len(e["bindings"])) for e in rec] == [
        (9, 0, 4, 1), (12, 6, 10, 1)]


def canonical(bindings: dict) -> str:
    return json.dumps(bindings, sort_keys=True)


@pytest.mark.parametrize("case", ["rsp_consumer_test", "rsp_static_plus_window_test",
                                  "items_at_closes", "gap"])
def test_rspjs_windows_are_rsep_windows_shifted_by_one_unit(case):
    """On integer times [c-a, c) = (c-a-1, c-1]: rsep's [FROM NOW-(a+1) TO NOW-1 STEP b]
    holds exactly RSP-JS's windows, and gives RSP-JS's recorded rows at every window RSP-JS
    evaluates; RSP-JS evaluates it at the next arrival instead of at c, and skips the
    windows rsep lists here: in the gap, [-2, 2) is not the latest closed window at any
    arrival, and [8, 12) would be reported by an arrival after 12, which never comes."""
    text = (RSPJS / CASES[case]["query"]).read_text()
    shifted = re.sub(r"\[RANGE (\d+) STEP (\d+)\]",
                     lambda m: f"[FROM NOW-{int(m[1]) + 1} TO NOW-1 STEP {m[2]}]", text)
    out = rspjs_run(case, shifted)
    rows: dict[int, list[dict]] = defaultdict(list)
    for o in out:
        rows[o["time"]].append(o["bindings"])
    evaluated = set()
    for e in RECORDED[case]["evaluations"]:
        assert sorted(map(canonical, rows[e["close"]])) == sorted(map(canonical, e["bindings"])), e["close"]
        evaluated.add(e["close"])
    skipped = {"rsp_consumer_test": [], "rsp_static_plus_window_test": [], "items_at_closes": [],
               "gap": [2, 12]}[case]
    assert sorted(t for t in rows if t not in evaluated) == skipped


def test_rspjs_corpus_parses_and_runs():
    for entry in MANIFEST["rsp-js"]:
        text = (RSPJS / entry["file"]).read_text()
        if entry["expect"] == "refused":
            with pytest.raises(QueryError, match=entry["error"]) as e:
                parse_query(text)
            assert (e.value.line, e.value.column) == tuple(entry["at"]), entry["file"]
            continue
        q = parse_query(text)
        assert q.r2s is R2S.RSTREAM and q.name == "output"
        assert [(w.iri, w.stream, w.spec.range.amount, w.spec.step.amount) for w in q.dataset.windows] \
            == [tuple(x) for x in entry["windows"]], entry["file"]
        case = entry.get("case")
        if case:
            assert rspjs_run(case, text), entry["file"]


# ---------------------------------------------------------------- RSP4J forms

TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@pytest.mark.parametrize(("window", "kind", "range_", "step"), [
    ("[RANGE PT10S STEP PT5S]", WindowKind.TIME, 10_000, 5_000),
    ("[range pt10s step pt5s]", WindowKind.TIME, 10_000, 5_000),  # RSP4J reads keywords case-blind
    ("[RANGE PT5S STEP PT0.5S]", WindowKind.TIME, 5_000, 500),  # q52.rspql
    ("[RANGE PT24H STEP PT1M]", WindowKind.TIME, 86_400_000, 60_000),  # the covid examples
    ("[RANGE P1DT2H STEP PT1H]", WindowKind.TIME, 93_600_000, 3_600_000),  # days before T
    ("[RANGE PT10S]", WindowKind.TIME, 10_000, None),  # logicalStep is optional
    ("[ELEMENTS 5]", WindowKind.COUNT, 5, None),  # physicalWindow: the last 5 items
    ("[ELEMENTS 5 STEP 1]", WindowKind.COUNT, 5, None),
])
def test_rsp4j_window_forms(window, kind, range_, step):
    """Every window of RSP4J's RSPQL.g4 (logical RANGE/STEP with ISO 8601 durations,
    physical ELEMENTS), on ON <iri>, ON :prefixed, with REGISTER before the query."""
    q = parse_query(f"""PREFIX : <http://test/>
REGISTER ISTREAM :out AS
SELECT * FROM NAMED WINDOW :w ON <http://test/stream> {window}
WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}""")
    (w,) = q.dataset.windows
    assert (w.iri, w.stream, w.spec.kind) == ("http://test/w", "http://test/stream", kind)
    assert q.r2s is R2S.ISTREAM and q.name == "http://test/out"
    if kind is WindowKind.COUNT:
        assert (w.spec.count, w.spec.count_triples) == (range_, False)
    else:
        assert w.spec.range.in_ms and w.spec.range.amount == range_
        assert (w.spec.step.amount if w.spec.step else None) == step


@pytest.mark.parametrize(("window", "message"), [
    ("[ELEMENTS 5 STEP 2]", r"\[ELEMENTS 5 STEP 2\]: a count window that reports every 2 items "
                            r"has no counterpart"),
    ("[RANGE P1Y STEP PT1S]", "duration P1Y: years and months have no fixed length"),
    ("[RANGE P1M STEP P1D]", "duration P1M: years and months"),
    ("[RANGE P1Y2M3DT4H STEP PT1H]", "duration P1Y2M3DT4H: years and months"),
])
def test_rsp4j_forms_rsep_cannot_represent_are_refused_where_they_stand(window, message):
    text = f"SELECT * FROM NAMED WINDOW <http://w> ON <http://s> {window}\nWHERE {{ WINDOW <http://w> {{ ?s ?p ?o }} }}"
    with pytest.raises(QueryError, match=message) as e:
        parse_query(text)
    assert e.value.line == 1 and e.value.column > 40


def test_rspjs_on_stream_and_rsp4j_on_are_the_same_window():
    a = parse_query("PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :w ON STREAM :s [RANGE 10 STEP 2] "
                    "WHERE { WINDOW :w { ?s ?p ?o } }")
    b = parse_query("PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :w ON :s [RANGE 10 STEP 2] "
                    "WHERE { WINDOW :w { ?s ?p ?o } }")
    assert a.dataset.windows == b.dataset.windows
    # A prefix that happens to be called stream: is still a prefix.
    c = parse_query("PREFIX stream: <http://e/> SELECT * FROM NAMED WINDOW stream:w ON stream:s "
                    "[RANGE 10 STEP 2] WHERE { WINDOW stream:w { ?s ?p ?o } }")
    assert c.dataset.windows == b.dataset.windows


# ---------------------------------------------------------------- RSP4J results

# RSP4J's operatorapi tests' stream (utils/DummyStream.populateStream with prefix http://test/;
# CPTriplePatternTest.populateStream has the same times with Blue/Red swapped for S2 and S3).
# Times are milliseconds (time_unit_ms=1, so PT2S is 2000).
T = "http://test/"
COLOR = "http://color#"
COLORS = [(1000, "S1", "Green"), (1999, "S2", "Red"), (2001, "S3", "Blue"), (3000, "S4", "Green"),
          (5000, "S5", "Blue"), (5000, "S6", "Red"), (6001, "S7", "Red")]
VALUES = [(1000, "S1", 20), (1999, "S2", 20), (2001, "S3", 40), (3000, "S4", 50), (5000, "S5", 40),
          (5000, "S6", 90), (6001, "S7", 20)]


def colors(swap: bool = False) -> list[Event]:
    out = []
    for t, s, c in COLORS:
        if swap and s in ("S2", "S3"):
            c = {"Red": "Blue", "Blue": "Red"}[c]
        out.append(item(T + "stream", t, T + s, TYPE, COLOR + c))
    return out


def values() -> list[Event]:
    xsd_integer = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    return [item(T + "stream", t, T + s, T + "hasValue", ox.Literal(str(v), datatype=xsd_integer))
            for t, s, v in VALUES]


def rsp4j(query: str, events: list[Event], **kw) -> list[dict]:
    return run(query, events, time_unit_ms=1, **kw)


def test_rsp4j_triple_pattern_query():
    """CPTriplePatternTest.triplePatternQueryTest: RSTREAM, [RANGE PT2S STEP PT2S], expected S1 then S4.

    rsep gives the same rows: S1 at 2000 ((0, 2000] holds S1 and S2), S4 at 4000; the
    window closing at 6000 holds S5 and S6, no green.
    """
    q = f"""REGISTER RSTREAM <http://out/stream> AS SELECT *
FROM NAMED WINDOW <{T}window> ON <{T}stream> [RANGE PT2S STEP PT2S]
WHERE {{ WINDOW <{T}window> {{ ?green <{TYPE}> <{COLOR}Green> . }} }}"""
    assert by_time(rsp4j(q, colors(swap=True)), "green", T) == {2000: ["S1"], 4000: ["S4"]}


def test_rsp4j_aggregation_query():
    """CPTriplePatternTest.triplePatternAggregationQueryTest: COUNT per window, expected 1, 1, 0.

    rsep: 1, 1, 0 at 2000, 4000, 6000, as RSP4J. RSP4J's window [6000, 8000) would be
    reported by an arrival after 8000; rsep's (6000, 8000] is with --until 8000 (0: S7 is red).
    """
    q = f"""REGISTER RSTREAM <http://out/stream> AS SELECT (Count(?green) AS ?count)
FROM NAMED WINDOW <{T}window> ON <{T}stream> [RANGE PT2S STEP PT2S]
WHERE {{ WINDOW <{T}window> {{ ?green <{TYPE}> <{COLOR}Green> . }} }}"""
    counts = [(o["time"], o["bindings"]["count"].split('"')[1]) for o in rsp4j(q, colors(swap=True))]
    assert counts == [(2000, "1"), (4000, "1"), (6000, "0")]
    counts = [(o["time"], o["bindings"]["count"].split('"')[1])
              for o in rsp4j(q, colors(swap=True), until=8000)]
    assert counts[-1] == (8000, "0")


def test_rsp4j_filter_queries():
    """FilterTest (ISTREAM, [RANGE PT10S STEP PT5S]): RSP4J evaluates [-5000, 5000) at 6001.

    iriFilterQuery, varFilterQuery and filterOutsideOfWindow give RSP4J's rows, at 5000.
    valueFilterQuery (FILTER(?value > 40)) expects 50 only; rsep's window (-5000, 5000]
    also holds S5 = 40 and S6 = 90, stamped exactly 5000, which RSP4J puts in its next
    window [0, 10000) (never reported: nothing arrives after 10000), so rsep answers 50
    and 90.
    """
    head = f"REGISTER ISTREAM <http://out/stream> AS SELECT {{}} FROM NAMED WINDOW <{T}window> " \
           f"ON <{T}stream> [RANGE PT10S STEP PT5S] "
    iri = head.format("?green") + f"WHERE {{ WINDOW <{T}window> {{?green <{TYPE}> <{COLOR}Green> . " \
                                  f"Filter(?green = <{T}S4>)}} }}"
    assert by_time(rsp4j(iri, colors()), "green", T) == {5000: ["S4"]}
    var = head.format("?green ?green2") + f"WHERE {{ WINDOW <{T}window> {{?green <{TYPE}> <{COLOR}Green> . " \
                                          f"?green2 <{TYPE}> <{COLOR}Green> . Filter(?green = ?green2)}} }}"
    out = rsp4j(var, colors())
    assert by_time(out, "green", T) == by_time(out, "green2", T) == {5000: ["S1", "S4"]}
    two = head.format("?green ?green2") + f"FROM NAMED WINDOW <{T}window2> ON <{T}stream> [RANGE PT10S STEP PT5S] " \
        f"WHERE {{ WINDOW <{T}window> {{?green <{TYPE}> <{COLOR}Green> . }} " \
        f"WINDOW <{T}window2> {{?green2 <{TYPE}> <{COLOR}Green> . }} Filter(?green = ?green2) }}"
    out = rsp4j(two, colors())
    assert by_time(out, "green", T) == by_time(out, "green2", T) == {5000: ["S1", "S4"]}
    value = head.format("?value") + f"WHERE {{ WINDOW <{T}window> {{?obs <{T}hasValue> ?value . " \
                                    f"Filter(?value >40)}} }}"
    got = [(o["time"], o["bindings"]["value"].split('"')[1]) for o in rsp4j(value, values())]
    assert sorted(got) == [(5000, "50"), (5000, "90")]


def test_rsp4j_two_windows_on_one_stream():
    """MultipleWindowTest.multipleWindowFromQueryTest and ...WithStaticData (ISTREAM): greens in
    [RANGE PT2S STEP PT2S], reds in [RANGE PT4S STEP PT2S]. Expected (S1, S2), (S4, S2); with
    colors.nt as FROM graph, joined on ?source: (S4, S2, Source2). rsep: the same rows, at
    2000 and 4000."""
    windows = f"""FROM NAMED WINDOW <{T}window1> ON <{T}stream> [RANGE PT2S STEP PT2S]
FROM NAMED WINDOW <{T}window2> ON <{T}stream> [RANGE PT4S STEP PT2S]"""
    where = f"""WINDOW <{T}window1> {{?green <{TYPE}> <{COLOR}Green>.}}
  WINDOW <{T}window2> {{?red <{TYPE}> <{COLOR}Red>.}}"""
    q = f"REGISTER ISTREAM <http://out/stream> AS SELECT * {windows} WHERE {{ {where} }}"
    out = rsp4j(q, colors())
    assert [(o["time"], o["bindings"]["green"], o["bindings"]["red"]) for o in out] == [
        (2000, f"<{T}S1>", f"<{T}S2>"), (4000, f"<{T}S4>", f"<{T}S2>")]
    sources = [(T + s, COLOR + "source", T + src) for s, src in (
        ("S1", "Source1"), ("S2", "Source2"), ("S3", "Source3"), ("S4", "Source2"), ("S5", "Source3"),
        ("S6", "Source4"), ("S7", "Source1"))]
    q = f"""REGISTER ISTREAM <http://out/stream> AS SELECT * FROM <{T}colors.nt> {windows}
WHERE {{ ?green <{COLOR}source> ?source. ?red <{COLOR}source> ?source {where} }}"""
    out = rsp4j(q, colors(), graphs={T + "colors.nt": sources})
    assert [(o["time"], sorted(o["bindings"].values())) for o in out] == [
        (4000, [f"<{T}S2>", f"<{T}S4>", f"<{T}Source2>"])]


def test_rsp4j_undeclared_window_is_refused_where_rsp4j_answers_nothing():
    """CPTriplePatternTest.wrongWindowQueryTest names a window the query does not declare
    and expects no output; rsep refuses the query, naming the declared windows."""
    q = f"""REGISTER RSTREAM <http://out/stream> AS SELECT *
FROM NAMED WINDOW <{T}window> ON <{T}stream> [RANGE PT2S STEP PT2S]
WHERE {{ WINDOW <{T}wrongwindow> {{ ?green <{TYPE}> <{COLOR}Green> . }} }}"""
    with pytest.raises(QueryError, match=r"WINDOW <http://test/wrongwindow>: no window of that name "
                                         r"is declared \(declared: <http://test/window>\)") as e:
        parse_query(q)
    assert (e.value.line, e.value.column) == (3, 16)


# ---------------------------------------------------------------- RSP4J's own texts
# RSP4J's files are not shipped: `python -m rsep.testing rsp4j` reads them from $RSEP_RSP4J
# (tests/data/rsp-peers/README.md). Here the check itself runs on a stand-in tree of texts
# written for this test, placed as RSP4J places its own (a .rspql file, a Java string, a
# Markdown block), with a manifest of the same form.

STAND_IN = {
    "q/select.rspql": """PREFIX : <http://test/>
REGISTER RSTREAM <http://out/stream> AS
SELECT * FROM NAMED WINDOW :w ON :stream [RANGE PT5S STEP PT1S]
WHERE { WINDOW :w { ?s ?p ?o } }
""",
    "src/Example.java": """class Example {
  // the query, as the program builds it
  String q = "PREFIX : <http://test/> "
          + "REGISTER RSTREAM <http://out/stream> AS "
          // a comment line between the parts
          + "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :stream [RANGE PT5S STEP PT1S] "
          + "WHERE { WINDOW :w { ?s ?p \\"o\\" } }";
}
""",
    "example-queries.md": """# Queries

```
PREFIX : <http://test/>
REGISTER RSTREAM <http://out/stream> AS
SELECT * FROM NAMED WINDOW :w ON :stream [RANGE PT5S STEP PT1S]
WHERE { WINDOW :undeclared { ?s ?p ?o } }
```
""",
}
STAND_IN_MANIFEST = """
[[rsp4j]]
path = "q/select.rspql"
line = 0
expect = "runs"

[[rsp4j]]
path = "src/Example.java"
line = 3
expect = "runs"

[[rsp4j]]
path = "example-queries.md"
line = 4
expect = "refused"
error = "WINDOW <http://test/undeclared>: no window of that name is declared"

[[rsp4j]]
path = "q/select.rspql"
line = 0
expect = "refused"
error = "anything"

[[rsp4j]]
path = "src/Example.java"
line = 3
expect = "runs"
dialect = "cqels"
"""


def rsp4j_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "RSEP_RSP4J"}, **env,
           "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "rsep.testing", "rsp4j", *args], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)


def test_rsp4j_check_reads_each_query_where_it_stands(tmp_path: Path):
    for path, text in STAND_IN.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert java_string_at(STAND_IN["src/Example.java"], 3) == (
        'PREFIX : <http://test/> REGISTER RSTREAM <http://out/stream> AS SELECT (COUNT(*) AS ?n) '
        'FROM NAMED WINDOW :w ON :stream [RANGE PT5S STEP PT1S] WHERE { WINDOW :w { ?s ?p "o" } }')
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(STAND_IN_MANIFEST, encoding="utf-8")
    p = rsp4j_check({"RSEP_RSP4J": str(tmp_path)}, "--manifest", str(manifest))
    assert p.stdout.splitlines() == [
        "q/select.rspql:0: runs",
        "src/Example.java:3: runs",
        "example-queries.md:4: refused as the manifest says",
        "q/select.rspql:0: WRONG: runs, the manifest says refused (anything)",
        "src/Example.java:3: WRONG: read as rspql, the manifest says cqels",
        "5 queries: 3 as the manifest says, 2 wrong",
    ]
    assert p.returncode == 1


@pytest.mark.parametrize("value", [None, "/nonexistent/rsp4j"])
def test_rsp4j_check_without_rsp4j_stops_with_one_line(value):
    p = rsp4j_check({"RSEP_RSP4J": value} if value else {})
    assert p.returncode == 2 and p.stdout == ""
    first = "RSEP_RSP4J is not set" if value is None else "RSEP_RSP4J=/nonexistent/rsp4j is not a directory"
    assert p.stderr == (f"rsep.testing rsp4j: {first}: needs RSP4J's files: set RSEP_RSP4J to a "
                        "checkout of RSP4J's public repository (github streamreasoning/rsp4j) at "
                        "commit c46e0f674fb740b85543e73d8013196b18763abd\n")


def test_rsp4j_manifest_is_the_published_corpus():
    """The manifest the check reads: 74 texts, 60 to run and 14 refused with a reason."""
    entries = MANIFEST["rsp4j"]
    assert len(entries) == 74
    assert sum(e["expect"] == "runs" for e in entries) == 60
    assert all(e["error"] for e in entries if e["expect"] == "refused")
