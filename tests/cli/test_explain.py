"""`rsep explain` for every kind of query: RSP (with aggregates), SPASEQ, EP-SPARQL."""

from __future__ import annotations

from rsep.cli.main import main
from rsep.testing.snippets import ROOT

AGG = """PREFIX : <http://example.org/>
SELECT ?shop ({f} AS ?n)
WHERE {{ STREAM <http://coupons> [RANGE 30] {{ ?shop :offers ?c . }} }}
GROUP BY ?shop
"""

EP = """PREFIX : <http://example.org/>
SELECT ?c WHERE { { ?c :hasStockPrice ?p1 } SEQ { ?c :hasStockPrice ?p2 }
  FILTER (?p2 < ?p1 && getDURATION() < 30) }
"""


def _explain(capsys, tmp_path, text: str, *args: str) -> tuple[int, str, str]:
    f = tmp_path / "q.rq"
    f.write_text(text)
    code = main(["explain", str(f), *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_explain_count_shows_the_pattern_and_the_sum_of_counts_notion(capsys, tmp_path):
    code, out, _ = _explain(capsys, tmp_path, AGG.format(f="COUNT(*)"), "--lars")
    assert code == 0
    assert "  BGP  [stream pattern g_1 of <http://coupons>]" in out
    assert "  (COUNT(*) AS ?n) GROUP BY ?shop" in out
    assert "the sum of the counts pushed in (t1, t2] equals the count pulled at t2" in out
    # the LARS program is the pattern's: Fig. 2 has no aggregate
    assert "LARS program tau_2(Q) (1 rules, positive):" in out


def test_explain_max_and_avg(capsys, tmp_path):
    code, out, _ = _explain(capsys, tmp_path, AGG.format(f="MAX(?c)"))
    assert code == 0 and "the max of the values pushed in (t1, t2] equals the max pulled" in out
    code, out, _ = _explain(capsys, tmp_path, AGG.format(f="AVG(?c)"))
    assert code == 0 and "push-pull agreement: none. AVG has no push-pull agreement notion" in out
    code, out, _ = _explain(capsys, tmp_path, AGG.format(f="COUNT(*)"), "--format", "dot")
    assert code == 0 and out.startswith("digraph") and "(COUNT(*) AS ?n) GROUP BY ?shop" in out


def test_explain_spaseq_prints_the_automaton(capsys, tmp_path):
    q1 = str(ROOT / "tests" / "data" / "spaseq" / "query1.rq")
    assert main(["explain", q1]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SEQ (A; B+, C)") and "x0 (initial)  waits for A" in out
    assert "\nengine: NFA_scep (Algorithms 1-9)\n" in out  # B+ needs the general engine
    # (Kleene+ and several streams run natively now; this query's GPMs read a background GRAPH)
    assert "\nnative: not taken: GPM A: a background GRAPH" in out
    assert main(["explain", str(ROOT / "docs" / "examples" / "spaseq.rq")]) == 0
    out = capsys.readouterr().out
    assert "\nengine: chain (plain GPMs under , and ;: each run is one path)\n" in out
    assert "\nnative: not taken: GPM A: a blank node in a triple pattern\n" in out
    chain = tmp_path / "rise.rq"
    chain.write_text("SELECT ?c ?p1 ?p2 WITHIN 10 FROM STREAM S1 <http://e/s> WHERE { SEQ (A; B) "
                     "DEFINE GPM A ON S1 { ?c <http://e/price> ?p1 } "
                     "DEFINE GPM B ON S1 { ?c <http://e/price> ?p2 FILTER (?p2 > ?p1) } }",
                     encoding="utf-8")
    assert main(["explain", str(chain)]) == 0
    out = capsys.readouterr().out
    assert "\nnative: taken by `rsep run`" in out or "\nnative: not taken: RSEP_" in out
    assert main(["explain", q1, "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith("digraph")
    assert main(["explain", q1, "--lars"]) == 2
    assert "not SPASEQ" in capsys.readouterr().err


def test_explain_epsparql_prints_its_operators(capsys, tmp_path):
    code, out, _ = _explain(capsys, tmp_path, EP, "--dialect", "epsparql")
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "policy: unrestricted"
    assert any(x.strip().startswith("SEQ (SeqJoin)") for x in lines)
    assert any("getDURATION() < 30" in x for x in lines)
    assert sum(x.strip() == "?c <http://example.org/hasStockPrice> ?p1" for x in lines) == 1
    code, out, _ = _explain(capsys, tmp_path, EP, "--dialect", "epsparql", "--format", "dot")
    assert code == 0 and out.startswith("digraph epsparql")


def test_explain_a_query_outside_001s_model_still_explains_how_it_runs(capsys):
    """The demo's query (a FILTER inside its window) is outside 001's (V, P, D, S) fragment:
    explain says so and still prints its windows, evaluation path and Spark plan; --lars,
    which needs the model, is refused."""
    q = str(ROOT / "examples" / "srbench-hot.rq")
    assert main(["explain", q]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:8] == [
        "query: http://example.org/hot  dialect: rspql  form: SELECT",
        "report: window-close  r2s: RSTREAM",
        "V: ?sensor (MAX(?value) AS ?max) (COUNT(?obs) AS ?readings)",
        "GROUP BY ?sensor",
        "aggregates: MAX(?value), COUNT(?obs)",
        "windows:",
        "  <http://example.org/srbench> [RANGE 5000 STEP 5000] -> window <http://example.org/w>",
        "001's model (V, P, D, S): not shown: a stream graph pattern that is not a basic graph "
        "pattern is outside the LARS translation's fragment (BGP, AND, UNION, OPTIONAL, FILTER, "
        "MINUS, GRAPH <iri>)"]
    assert any(x.startswith("evaluation: maintained: ") for x in lines)
    assert any(x.startswith("on Spark: partition key: ") for x in lines)
    assert main(["explain", "--lars", q]) == 2  # a query the translation cannot take: bad usage, as for SPASEQ
    assert "outside the LARS translation's fragment" in capsys.readouterr().err


def test_explain_prints_a_spaseq_querys_projection_as_written(tmp_path):
    """(issue 53, point 6) the SELECT clause as the query has it: DISTINCT, expressions
    written back, and SELECT * with the variables it stands for."""
    import subprocess
    import sys

    base = (ROOT / "docs" / "examples" / "warming" / "warming.rq").read_text()

    def first_lines(text: str) -> list[str]:
        f = tmp_path / "q.rq"
        f.write_text(text)
        r = subprocess.run([sys.executable, "-W", "ignore::UserWarning", "-m", "rsep.cli.main",
                            "explain", str(f)], capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stderr) == (0, "")
        return r.stdout.splitlines()[:3]

    assert first_lines(base) == ["SEQ (A; B)  WITHIN 10", "SELECT ?sensor ?before ?after",
                                 "streams: S1 = <http://example.org/station>"]
    assert first_lines(base.replace("SELECT ?sensor ?before ?after",
                                    "SELECT DISTINCT ?sensor (?after - ?before AS ?rise)"))[1] \
        == "SELECT DISTINCT ?sensor (?after - ?before AS ?rise)"
    assert first_lines(base.replace("SELECT ?sensor ?before ?after", "SELECT *"))[1] == (
        "SELECT * (every variable of the GPMs: ?before ?r1 ?sensor ?after ?r2)")
