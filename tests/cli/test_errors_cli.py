"""What the rsep command says when a query or its input is wrong (issue 53, point 6), run as
a user runs it: a process of its own, its stderr and exit status read whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rsep.testing.snippets import ROOT

COUPON = ROOT / "examples" / "coupon"


def rsep(*args: str) -> subprocess.CompletedProcess[str]:
    # -W ignore: a compiled module older than its source warns, which is not the command's output
    return subprocess.run([sys.executable, "-W", "ignore", "-m", "rsep.cli.main", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def query(tmp_path: Path, text: str) -> str:
    f = tmp_path / "q.rq"
    f.write_text(text)
    return str(f)


# (query text, the error after "FILE:")
ERRORS = [
    # expected: what the parser takes after '3' inside FILTER ( ... ), and no '=' , ',' or AS
    # that the parse table lists for the state but whose reductions fail ('*' is not "asterix")
    ("SELECT * WHERE { ?s ?p ?o . FILTER (?o > 3 }\n",
     "1:44: syntax error: unexpected '}'; expected one of '*', a number, '||', '/', '&&', '-', "
     "'+', ')' (the '(' at 1:36 is still open)"),
    ("SELECT * WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 2 *\n",
     "1:49: syntax error: unexpected '*'; expected one of end of query, OFFSET, VALUES"),
    ("SELECT ?s WHERE { ?s ?p ?o } GROUP ?s\n",
     "1:36: syntax error: unexpected '?s'; expected BY"),
    # a missing '}': at the '{' it leaves open, not at the end of the text
    ("PREFIX : <http://e/>\nSELECT ?s\nWHERE {\n  STREAM :s [RANGE 5] { ?s :p ?o . }\n\n",
     "3:7: syntax error: unclosed '{': the query ends (line 4) before its '}'"),
    ("PREFIX : <http://e/>\nSELECT ?s\nWHERE {\n  STREAM :s [RANGE 5] { ?s foo:p ?o . }\n}\n",
     "4:28: undeclared prefix 'foo:' (no PREFIX declares it)"),
]


@pytest.mark.parametrize("text, error", ERRORS)
def test_a_query_error_is_the_same_line_and_exit_1_from_run_and_explain(tmp_path, text, error):
    q = query(tmp_path, text)
    run = rsep("run", q, "--stream", "http://e/s=none.trig")
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"rsep: {q}:{error}\n")
    explain = rsep("explain", q)
    assert (explain.returncode, explain.stdout, explain.stderr) == (
        1, "", f"rsep explain: {q}:{error}\n")


def test_explain_lars_on_the_readme_coupon_query_needs_no_time_unit(tmp_path):
    q = str(COUPON / "q1-csparql.rq")
    chosen = rsep("explain", q, "--lars")
    given = rsep("explain", q, "--lars", "--time-unit", "1m")
    assert (chosen.returncode, chosen.stderr, given.returncode) == (0, "", 0)
    note = ("time unit: 1m, from the query's durations (an integer timestamp counts these; "
            "--time-unit gives another)")
    assert chosen.stdout.splitlines() == [
        x for line in given.stdout.splitlines()
        for x in ([note, line] if line == "" else [line])]
    assert "  s_1 = <http://coupons> [RANGE 30m] [o,c) -> ⊞^30; merged into the default graph; " \
        "g_1 = {∅}" in chosen.stdout.splitlines()
    # a duration of seconds that is no whole number of minutes: the unit is the second
    q90 = Path(q).read_text().replace("[RANGE 5m]", "[RANGE 90s]")
    r = rsep("explain", query(tmp_path, q90), "--lars")
    assert r.returncode == 0 and "time unit: 1s, " in r.stdout
    assert "  s_2 = <http://locations> [RANGE 90s] [o,c) -> ⊞^90; merged into the default " \
        "graph; g_2 = {∅}" in r.stdout.splitlines()


def test_explain_prints_the_projection_group_by_and_aggregates_as_written(tmp_path):
    q = query(tmp_path, """PREFIX : <http://example.org/>
REGISTER RSTREAM :q AS
SELECT ?shop ?product (COUNT(?coupon) AS ?n) (MAX(?percent) AS ?top)
FROM NAMED WINDOW :w ON :coupons [RANGE 30 STEP 10]
WHERE { WINDOW :w { ?shop :offers ?coupon . ?coupon :reduce ?percent . ?coupon :on ?product . } }
GROUP BY ?shop ?product
HAVING (SUM(?percent) > 10)
""")
    r = rsep("explain", q)
    assert r.returncode == 0
    assert r.stdout.splitlines()[:6] == [
        "query: http://example.org/q  dialect: rspql  form: SELECT",
        "report: window-close  r2s: RSTREAM",
        "V: ?shop ?product (COUNT(?coupon) AS ?n) (MAX(?percent) AS ?top)",
        "GROUP BY ?shop ?product",
        "HAVING (SUM(?percent) > 10)",
        "aggregates: COUNT(?coupon), MAX(?percent), SUM(?percent)"]


def test_quiet_still_prints_the_one_summary_line_for_rejected_records(tmp_path):
    stream = tmp_path / "s.trig"
    stream.write_text("<http://e/g1> { <http://e/a> <http://e/p> 1 . }\n")  # no timestamp
    q = query(tmp_path, "SELECT * WHERE { STREAM <http://e/s> [RANGE 5] { ?s ?p ?o } }\n")
    r = rsep("run", q, "--stream", f"http://e/s={stream}", "-q")
    assert (r.returncode, r.stdout, r.stderr) == (3, "", "rsep: 1 input record(s) rejected\n")
    r = rsep("run", q, "--stream", f"http://e/s={stream}", "-q", "--dead-letter",
             str(tmp_path / "dead.jsonl"))
    assert (r.returncode, r.stderr) == (
        3, f"rsep: 1 input record(s) rejected (written to {tmp_path / 'dead.jsonl'})\n")
    r = rsep("convert", str(stream), "--to", "rdfm-trig", "-o", str(tmp_path / "log.trig"), "-q")
    assert (r.returncode, r.stdout, r.stderr) == (3, "", "rsep: 1 input record(s) rejected\n")


def test_compare_disagreeing_is_4_an_error_1_a_refusal_2(tmp_path):
    base = ["--stream", f"http://coupons={COUPON / 'coupons.trig'}", "--graph",
            f"http://products={COUPON / 'products.ttl'}", "--time-unit", "1m"]
    dense = tmp_path / "locations.trig"
    dense.write_text("@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
                     ":g prov:generatedAtTime 12 . :g { :claire :isNear :b . }\n")
    q1 = str(COUPON / "q1-csparql.rq")
    r = rsep("compare", q1, *base, "--stream", f"http://locations={dense}", "--period", "10")
    assert (r.returncode, r.stderr) == (4, "")
    r = rsep("compare", q1, *base, "--stream", f"http://locations={COUPON / 'locations.trig'}",
             "--period", "10", "--until", "30")
    assert (r.returncode, r.stderr) == (0, "")
    bad = query(tmp_path, "SELECT * WHERE { ?s ?p ?o . FILTER (?o > 3 }\n")
    r = rsep("compare", bad, "--period", "10")
    assert r.returncode == 1 and r.stderr.startswith(f"rsep compare: {bad}:1:44: syntax error")
    r = rsep("compare", str(ROOT / "docs" / "examples" / "spaseq.rq"), "--period", "10")
    assert r.returncode == 2 and "it takes RSP queries (RSP-QL, C-SPARQL, CQELS), not SPASEQ" \
        in r.stderr
