"""Aggregate push-pull agreement (001 Sec. 6): COUNT by the sum of the pushed counts,
MAX/MIN by the max/min of the pushed values; AVG/MEDIAN have no agreement notion."""

from __future__ import annotations

import json

import pytest

from rsep.cli.main import main
from rsep.lang import parse_query
from rsep.lars.aggregates import (
    Aggregate,
    NoAgreementNotion,
    compare_aggregate,
    find_aggregate,
    write_aggregate_comparison,
)
from rsep.lars.compare import compare
from rsep.lars.core import LarsError
from rsep.testing.snippets import EX, ev

C = "http://coupons"
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"
COUPONS = [ev(C, 2, ":a :offers :c1 . :c1 :reduce 30 ."), ev(C, 5, ":b :offers :c2 . :c2 :reduce 25 ."),
           ev(C, 15, ":a :offers :c3 . :c3 :reduce 40 .")]
# the mapping (a, c1) leaves the [RANGE 4] window at 16 and comes back at 18
REENTRY = [ev(C, 11, ":a :offers :c1 ."), ev(C, 16, ":b :offers :c2 ."), ev(C, 18, ":a :offers :c1 .")]


def query(projection: str, pattern: str = "?s :offers ?c . ?c :reduce ?p .", rng: int = 30,
          group: str = ""):
    return parse_query(f"PREFIX : <{EX}> SELECT {projection} WHERE {{ STREAM <{C}> [RANGE {rng}] "
                       f"{{ {pattern} }} }}" + (f" GROUP BY {group}" if group else ""))


def rows(c):
    return {(r.t1, r.t2): r for r in c.rows}


def lit(n: int) -> str:
    return f'"{n}"{INT}'


def test_find_aggregate_reads_the_projection():
    agg, inner = find_aggregate(query("?s (COUNT(?c) AS ?n)", group="?s"))
    assert agg == Aggregate("COUNT", "c", False, "n", ("s",))
    assert inner.sparql.split("WHERE")[0].rstrip().endswith("SELECT *") and "GROUP" not in inner.sparql
    assert find_aggregate(query("(MAX(DISTINCT ?p) AS ?m)"))[0] == Aggregate("MAX", "p", True, "m")
    assert find_aggregate(query("?s ?c")) is None


def test_count_agrees_by_the_sum_of_pushed_counts():
    c = compare_aggregate(query("(COUNT(*) AS ?n)"), COUPONS, {}, 10, 30)
    r = rows(c)
    assert r[0, 10].pushed == [(2, {(): 1}), (5, {(): 1})]
    assert r[0, 10].push == r[0, 10].pull == {(): 2} and r[0, 10].failed == []
    # Def. 4's "holds throughout" term: the two coupons of (0, 10] are still in the window
    assert r[10, 20].pushed == [(15, {(): 1}), ("carried", {(): 2})]
    assert r[10, 20].push == r[10, 20].pull == {(): 3}
    assert c.agree and all(x.agree and x.consistent for x in c.rows)


def test_grouped_count_agrees():
    c = compare_aggregate(query("?s (COUNT(?c) AS ?n)", group="?s"), COUPONS, {}, 10, 30)
    a, b = f"<{EX}a>", f"<{EX}b>"
    r = rows(c)[10, 20]
    assert r.push == r.pull == {(a,): 2, (b,): 1}
    assert r.to_json()["pull"] == [{"s": a, "n": 2}, {"s": b, "n": 1}]
    assert c.agree


def test_count_disagrees_when_a_mapping_is_pushed_twice():
    c = compare_aggregate(query("(COUNT(*) AS ?n)", "?s :offers ?c .", rng=4), REENTRY, {}, 10, 20)
    r = rows(c)[10, 20]
    assert r.pushed == [(11, {(): 1}), (16, {(): 1}), (18, {(): 1})]
    assert r.push == {(): 3} and r.pull == {(): 2} and not r.agree and not c.agree
    assert r.repushed == [((("c", f"<{EX}c1>"), ("s", f"<{EX}a>")), [11, 18])]
    # the mappings agree as sets (Definition 4), the counts do not: the sum-of-counts
    # notion is stricter. Of Theorem 4's premises only the one window function fails: at
    # 20 C-SPARQL's [16, 20) holds :b :offers :c2 (at 16), CQELS's (16, 20] does not
    assert r.failed == ["same snapshot at t2 (one window function)"] and r.consistent
    assert rows(compare(find_aggregate(query("(COUNT(*) AS ?n)", "?s :offers ?c .", rng=4))[1],
                        REENTRY, {}, 10, 20))[10, 20].agree


def test_count_disagrees_on_dense_input_explained_by_star3():
    c = compare_aggregate(query("(COUNT(*) AS ?n)", rng=3), COUPONS, {}, 10, 30)
    r = rows(c)[0, 10]
    assert r.push == {(): 2} and r.pull == {} and not r.agree and r.failed == ["(***)"]


def test_max_agrees():
    c = compare_aggregate(query("(MAX(?p) AS ?m)"), COUPONS, {}, 10, 30)
    r = rows(c)
    assert r[0, 10].pushed == [(2, {(): lit(30)}), (5, {(): lit(25)})]
    assert r[0, 10].push == r[0, 10].pull == {(): lit(30)}
    assert r[10, 20].push == r[10, 20].pull == {(): lit(40)}
    assert c.agree and all(x.consistent for x in c.rows)


def test_min_agrees_and_disagrees():
    c = compare_aggregate(query("(MIN(?p) AS ?m)"), COUPONS, {}, 10, 30)
    assert rows(c)[0, 10].push == rows(c)[0, 10].pull == {(): lit(25)}
    assert rows(c)[10, 20].pull == {(): lit(25)} and c.agree
    c = compare_aggregate(query("(MIN(?p) AS ?m)", rng=3), COUPONS, {}, 10, 30)
    r = rows(c)[0, 10]
    assert r.push == {(): lit(25)} and r.pull == {} and not r.agree and r.failed == ["(***)"]


@pytest.mark.parametrize("func", ["AVG", "SUM", "SAMPLE"])
def test_aggregates_without_a_notion_are_refused(func):
    with pytest.raises(NoAgreementNotion) as e:
        find_aggregate(query(f"({func}(?p) AS ?x)"))
    assert str(e.value).startswith(f"{func} has no push-pull agreement notion")
    if func == "AVG":
        assert "not recursively definable" in str(e.value)


def test_count_distinct_and_expressions_are_refused():
    with pytest.raises(NoAgreementNotion, match=r"COUNT\(DISTINCT \.\.\.\) has no"):
        find_aggregate(query("(COUNT(DISTINCT ?c) AS ?n)"))
    with pytest.raises(LarsError, match="not an expression over it"):
        find_aggregate(query("((COUNT(*) + 1) AS ?n)"))
    with pytest.raises(LarsError, match=r"exactly one COUNT/MAX/MIN in the projection \(found 2\)"):
        find_aggregate(query("(COUNT(*) AS ?n) (MAX(?p) AS ?m)"))
    with pytest.raises(LarsError, match="order clause is outside the aggregate comparison"):
        find_aggregate(query("?s (COUNT(*) AS ?n)", group="?s ORDER BY ?s"))


def test_median_extension_aggregate_is_refused():
    with pytest.raises(NoAgreementNotion, match="^MEDIAN has no push-pull agreement notion"):
        find_aggregate(query("(<http://example.org/fn#median>(?p) AS ?x)"))
    with pytest.raises(NoAgreementNotion, match="^AVG has no push-pull agreement notion"):
        find_aggregate(query("(<http://example.org/fn#avg>(?p) AS ?x)"))


def _stream_file(tmp_path, events):
    f = tmp_path / "coupons.trig"
    f.write_text("@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
                 + "".join(f":g{t} prov:generatedAtTime {t} . :g{t} {{ {ttl} }}\n" for t, ttl in events))
    return f


def test_cli_compare_aggregates(capsys, tmp_path):
    data = _stream_file(tmp_path, [(11, ":a :offers :c1 ."), (16, ":b :offers :c2 ."),
                                   (18, ":a :offers :c1 .")])
    qf = tmp_path / "q.rq"

    def cli(projection, fmt="table"):
        qf.write_text(f"PREFIX : <{EX}> SELECT {projection} WHERE {{ STREAM <{C}> [RANGE 4] "
                      "{ ?s :offers ?c . } }")
        code = main(["compare", str(qf), "--stream", f"{C}={data}", "--period", "10", "--until", "20",
                     "--format", fmt])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = cli("(COUNT(*) AS ?n)", "jsonl")
    got = [json.loads(x) for x in out.splitlines()]
    assert code == 4 and [(g["interval"], g["agree"]) for g in got] == [([0, 10], True), ([10, 20], False)]
    assert got[1]["push"] == [{"n": 3}] and got[1]["pull"] == [{"n": 2}]
    assert [p["time"] for p in got[1]["pushed"]] == [11, 16, 18]
    code, out, _ = cli("(COUNT(*) AS ?n)")
    assert code == 4 and "sum of the pushed counts" in out and 'pushed again: (c="c1", s="a") at 11, 18' in out
    code, out, _ = cli("(MAX(?c) AS ?m)")
    assert code == 0 and out.endswith("agree everywhere (period 10, up to 20)\n")
    code, out, err = cli("(AVG(?c) AS ?m)")
    assert code == 2 and out == ""
    assert err.startswith("rsep compare: AVG has no push-pull agreement notion (001 Sec. 6)")
    # decided before the input is read
    assert main(["compare", str(qf), "--stream", f"{C}=/nonexistent", "--period", "10"]) == 2
    assert "AVG has no push-pull agreement notion" in capsys.readouterr().err


def test_table_output():
    import io

    out = io.StringIO()
    write_aggregate_comparison(compare_aggregate(query("(COUNT(*) AS ?n)"), COUPONS, {}, 10, 30), out)
    lines = out.getvalue().splitlines()
    assert lines[2].split() == ["(0,", "10]", "yes", "2:[1]", "5:[1]", "2", "2", "none"]
    assert lines[-1] == "agree everywhere (period 10, up to 30)"
