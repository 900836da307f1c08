"""EP-SPARQL as ETALIS runs it (--policy etalis-chronological / etalis-recent): every
complex event of ETALIS's recorded outputs (tests/data/etalis/recorded.json, made by
tests/data/etalis/record.py with ETALIS itself), with its interval and detection time;
and the formal chronological / recent (000) unchanged beside it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.epsparql.etalis import EtalisPolicy, binarise, compile_query, run, tr_clauses
from rsep.lang import QueryError
from rsep.lang.epsparql import parse_epsparql
from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

DATA = Path(__file__).resolve().parents[1] / "data" / "etalis"
RECORDED = json.loads((DATA / "recorded.json").read_text())
CASES = RECORDED["cases"]
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
PREFIX = "PREFIX : <http://ex.org/>\n"


def _record_module():
    spec = importlib.util.spec_from_file_location("etalis_record", DATA / "record.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _term(s: str) -> ox.NamedNode | ox.Literal:
    if s.startswith("<"):
        return ox.NamedNode(s[1:-1])
    value, dt = s[1:].split('"^^<')
    return ox.Literal(value, datatype=ox.NamedNode(dt[:-1]))


def events(stream: list) -> list[Event]:
    return [Event("urn:s", f"urn:g{i}", s, e,
                  tuple(ox.Triple(*(_term(x) for x in tr)) for tr in trs))  # type: ignore[misc]
            for i, (s, e, trs) in enumerate(stream)]


def engine_outputs(query: str, policy: str, stream: list) -> list[dict]:
    eng = Engine()
    eng.register(parse_epsparql(query, policy=policy), name="q")
    return [o.to_json() for o in eng.run(events(stream))]


def _ids(c: dict) -> str:
    return f"{c['name']}-{c['policy']}"


def test_corpus_covers_what_the_issue_names() -> None:
    names = {c["name"] for c in CASES}
    for n in ("seq3_recent_issue", "duration_window_issue", "filter_rejects_selected_issue",
              "same_pattern_twice_issue", "equal_ends_issue", "equals_one_item", "simultaneous_items",
              "several_keys", "stock_query1", "bgp_and"):
        assert n in names
    assert {c["policy"] for c in CASES} == {"chronological", "recent"}
    assert sum(len(c["outputs"]) for c in CASES) > 150
    assert "sspider/etalis" in RECORDED["etalis"]["source"]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_engine_outputs_equal_etalis_recorded_outputs(case: dict) -> None:
    """Every complex event ETALIS fired, in its order, with its values, its interval
    [from, to] and its detection time (the end of the item whose arrival fired it)."""
    got = engine_outputs(case["query"], "etalis-" + case["policy"], case["stream"])
    want = [{"time": o["time"], "from": o["from"][0], "to": o["to"][0], **o["bindings"]}
            for o in case["outputs"]]
    assert [{"time": g["time"], "from": g["from"], "to": g["to"], **g["bindings"]} for g in got] == want


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_labels_equal_etalis_labels(case: dict) -> None:
    """The same, with the (second, counter) labels ETALIS gave each end of each interval."""
    q = parse_epsparql(case["query"], policy="etalis-" + case["policy"])
    got = [{"time": t, "bindings": b, "from": list(t1), "to": list(t2)}
           for t, b, t1, t2 in run(q, [tuple(x) for x in case["stream"]])]
    assert got == [{k: o[k] for k in ("time", "bindings", "from", "to")} for o in case["outputs"]]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_recorded_rules_are_the_translation(case: dict) -> None:
    """The ETALIS rule each recording ran is what the query translates to today."""
    rec = _record_module()
    q = parse_epsparql(case["query"], policy="etalis-" + case["policy"])
    assert rec.rules(compile_query(q)) == case["rules"]


def _vals(outs: list[dict], *names: str) -> list[tuple]:
    return [tuple(int(o["bindings"][n].split('"')[1]) for n in names) + (o["from"], o["to"], o["time"])
            for o in outs]


def _case(name: str, policy: str) -> dict:
    return next(c for c in CASES if c["name"] == name and c["policy"] == policy)


def test_the_issues_differences_formal_and_etalis() -> None:
    """Issue 21's five measured differences: rsep's formal chronological / recent (000)
    keep their answers; the ETALIS policies give ETALIS's."""
    c = _case("seq3_recent_issue", "recent")
    assert _vals(engine_outputs(c["query"], "recent", c["stream"]), "a", "b", "c") == [(1, 3, 4, 1, 4, 4)]
    assert _vals(engine_outputs(c["query"], "etalis-recent", c["stream"]), "a", "b", "c") == [(1, 2, 4, 1, 4, 4)]

    c = _case("duration_window_issue", "chronological")
    assert _vals(engine_outputs(c["query"], "chronological", c["stream"]), "a", "b", "c") == [(1, 2, 5, 1, 5, 5)]
    assert _vals(engine_outputs(c["query"], "etalis-chronological", c["stream"]), "a", "b", "c") == \
        [(1, 3, 5, 1, 5, 5)]

    c = _case("filter_rejects_selected_issue", "chronological")
    formal = _vals(engine_outputs(c["query"], "chronological", c["stream"]), "a", "b")
    assert formal[0] == (70, 60, 0, 20, 20)  # (then 80 -> 75 over [5, 10], once 70 is consumed)
    assert all(x[:2] != (80, 60) for x in formal)
    assert _vals(engine_outputs(c["query"], "etalis-chronological", c["stream"]), "a", "b") == \
        [(80, 60, 5, 20, 20)]

    c = _case("same_pattern_twice_issue", "chronological")
    assert _vals(engine_outputs(c["query"], "chronological", c["stream"]), "a", "b") == [(1, 2, 1, 2, 2)]
    assert _vals(engine_outputs(c["query"], "etalis-chronological", c["stream"]), "a", "b") == \
        [(1, 2, 1, 2, 2), (2, 3, 2, 3, 3)]

    c = _case("equal_ends_issue", "chronological")
    formal = {p: _vals(engine_outputs(c["query"], p, c["stream"]), "a", "b") for p in ("chronological", "recent")}
    assert formal == {"chronological": [(0, 5, 0, 5, 5)], "recent": [(1, 5, 1, 5, 5)]}  # by end, then start
    etalis = {p: _vals(engine_outputs(c["query"], "etalis-" + p, c["stream"]), "a", "b")
              for p in ("chronological", "recent")}
    assert etalis == {"chronological": [(1, 5, 1, 5, 5)], "recent": [(0, 5, 0, 5, 5)]}  # by arrival


def test_binarisation_and_clause_order_follow_etalis() -> None:
    """binarizer.P: inner operands first, the head's rule last; compiler.P: a sequence's
    checking clause before its inserting one."""
    q = parse_epsparql(PREFIX + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} FILTER (?c > ?a) }",
                       policy="etalis-recent")
    rules = binarise(compile_query(q))
    assert [(r.head.n, r.op) for r in rules] == [(1, "seq"), (2, "seq"), (3, "where"), (0, "event")]
    assert [(c.action, c.rule.head.n) for c in tr_clauses(rules)] == \
        [("check", 1), ("insert", 1), ("check", 2), ("insert", 2), ("where", 3), ("event", 0)]
    q2 = parse_epsparql(PREFIX + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} }", policy="etalis-recent")
    assert [(r.head.n, r.op) for r in binarise(compile_query(q2))] == [(0, "seq")]  # kept as it is


def test_policy_per_query_and_on_the_command_line(tmp_path: Path) -> None:
    q = parse_epsparql(PREFIX + "SELECT ?a ?b WHERE { {?k :p ?a} SEQ {?k :p ?b} }")
    assert q.with_policy("etalis-chronological").policy is EtalisPolicy.CHRONOLOGICAL
    assert parse_epsparql(q.text, policy="ETALIS-recent").policy is EtalisPolicy.RECENT
    with pytest.raises(QueryError, match="unknown"):
        parse_epsparql(q.text, policy="etalis-unrestricted")
    # two queries on one engine, each with its own policy
    c = _case("equal_ends_issue", "chronological")
    eng = Engine()
    eng.register(parse_epsparql(c["query"], policy="etalis-chronological"), name="chrono")
    eng.register(parse_epsparql(c["query"], policy="chronological"), name="formal")
    got = {(o.query, o.bindings["a"].split('"')[1]) for o in eng.run(events(c["stream"]))}  # type: ignore[union-attr]
    assert got == {("chrono", "1"), ("formal", "0")}
    # the CLI
    qf = tmp_path / "q.rq"
    qf.write_text(PREFIX + "SELECT ?a ?b WHERE { {?k :p ?a} SEQ {?k :p ?b} }")
    sf = tmp_path / "s.trig"
    sf.write_text("".join(f'<urn:g{i}> {{ <http://ex.org/k> <http://ex.org/p> {i} }}\n'
                          f'<urn:g{i}> <http://www.w3.org/ns/prov#generatedAtTime> {i} .\n' for i in (1, 2, 3)))
    out = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", str(qf), "--stream", f"urn:s={sf}",
                          "--policy", "etalis-chronological", "-q"], capture_output=True, text=True, check=True)
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [(x["bindings"]["a"], x["bindings"]["b"], x["from"], x["to"], x["time"]) for x in lines] == \
        [('"1"^^<' + XSD_INTEGER + ">", '"2"^^<' + XSD_INTEGER + ">", 1, 2, 2),
         ('"2"^^<' + XSD_INTEGER + ">", '"3"^^<' + XSD_INTEGER + ">", 2, 3, 3)]


@pytest.mark.parametrize(("query", "what"), [
    ("SELECT * WHERE { {?k :a ?a} OPTIONALSEQ {?k :b ?b} }", "OPTIONALSEQ"),
    ("SELECT * WHERE { {?k :a ?a} EQUALSOPTIONAL {?k :b ?b} }", "EQUALSOPTIONAL"),
    ("SELECT * WHERE { { {?k :a ?a} UNION {?k :c ?a} } SEQ {?k :b ?b} }", "UNION"),
    ("SELECT DISTINCT ?k WHERE { {?k :a ?a} SEQ {?k :b ?b} }", "DISTINCT"),
    ("SELECT * WHERE { { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() < 3) } SEQ {?k :c ?c} }", "window"),
    ("SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() > 3) }", "time function"),
    ("CONSTRUCT { ?k :d ?b } WHERE { {?k :a ?a} SEQ {?k :b ?b} }", "CONSTRUCT"),
])
def test_what_etalis_has_no_counterpart_for_is_refused(query: str, what: str) -> None:
    with pytest.raises(QueryError, match=what):
        Engine().register(parse_epsparql(PREFIX + query, policy="etalis-chronological"))


def _sizes_along(pattern: str, n: int, kind: Callable[[int], str],
                 size: Callable[[Any], int]) -> list[int]:
    """``size`` of an ETALIS-chronological machine (window 10) after each of n point items
    of one key, the i-th a triple ``:k :<kind(i)> i``."""
    from rsep.epsparql.etalis import Machine

    q = parse_epsparql(PREFIX + f"SELECT * WHERE {{ {pattern} FILTER (getDURATION() <= 10) }}",
                       policy="etalis-chronological")
    m = Machine(compile_query(q), EtalisPolicy.CHRONOLOGICAL)
    m.window = (10, False)
    k = "<http://ex.org/k>"
    out = []
    for i in range(n):
        m.item(i, i, [(k, f"<http://ex.org/{kind(i)}>", f'"{i}"^^<{XSD_INTEGER}>')])
        out.append(size(m))
    return out


def test_goals_stay_bounded_under_a_window() -> None:
    """With a window, goals too old for any later step are dropped (ETALIS keeps them
    with its garbage collection off; dropping them changes no output: see _forget)."""
    sizes = _sizes_along("{?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c}", 3000, lambda i: "a",
                         lambda m: m._size)
    assert max(sizes[1000:]) < 200


def test_counters_stay_bounded_under_a_window() -> None:
    """ETALIS keeps a counter for every second of the stream (counter_internal/2, never
    retracted); rsep keeps those of the seconds its goals hold labels of and of the seconds
    an item as long as the longest so far could still start at."""
    counted = _sizes_along("{?k :a ?a} SEQ {?k :b ?b}", 5000, lambda i: "a" if i % 3 else "b",
                           lambda m: len(m.counters))
    assert max(counted[1000:]) < 200


_SEQS = {
    "b": "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() <= 6) }",
    "c": "SELECT ?k ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} "
         "FILTER (getDURATION() <= 8) }",
    "a": "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a + 1) }",
}


@settings(max_examples=150, deadline=None)
@given(pattern=st.sampled_from(sorted(_SEQS)), policy=st.sampled_from(["chronological", "recent"]),
       items=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.sampled_from("abc"),
                                st.integers(0, 2), st.integers(0, 5)), max_size=40))
def test_forgetting_counters_changes_no_complex_event(pattern: str, policy: str, items: list) -> None:
    """Counters forgotten after every item against a machine that forgets none (ETALIS
    itself): the same complex events, detection times and labels' seconds, and the same
    labels outright while no item is longer than an earlier one."""
    from rsep.epsparql.etalis import Machine

    class Eager(Machine):
        def item(self, start, end, triples):  # type: ignore[no-untyped-def]
            out = super().item(start, end, triples)
            self._forget_counters(end)
            return out

    class Keeping(Machine):
        def _forget_counters(self, now: int) -> None:
            """ETALIS's own behaviour: every counter kept."""

    q = parse_epsparql(PREFIX + _SEQS[pattern], policy="etalis-" + policy)
    got: list[list] = [[], []]
    for m, out in zip((Eager(compile_query(q), q.policy), Keeping(compile_query(q), q.policy)),
                      got, strict=True):
        m.window = m.program.window(TimeKind.ABSTRACT)
        end, longest, grew = 0, 0, False
        for i, (step, span, kind, key, v) in enumerate(items):
            end += step
            start = max(0, end - span)
            grew = grew or (i > 0 and end - start > longest)
            longest = max(longest, end - start)
            tr = (f"<http://ex.org/k{key}>", f"<http://ex.org/{kind}>", f'"{v}"^^<{XSD_INTEGER}>')
            out.extend((end, sorted(o.mu.items()), o.t1, o.t2) for o in m.item(start, end, [tr]))
    eager, keeping = got
    assert [(t, mu, a[0], b[0]) for t, mu, a, b in eager] == \
        [(t, mu, a[0], b[0]) for t, mu, a, b in keeping]
    if not grew:
        assert eager == keeping
