"""The W3C SPARQL 1.1 evaluation tests inside every dialect (issue 16; rsep.testing).

Each test pyoxigraph itself passes is run, its data one event at time 0, through
RSP-QL (a window around WHERE), C-SPARQL (FROM STREAM), CQELS (a STREAM pattern),
EP-SPARQL (as written), SPASEQ (one GPM) and RSEP-QL's MATCH (one event pattern);
each must give the W3C's expected result, or be refused at parse time / stay silent
for a reason listed in rsep.testing.REFUSALS / SILENCES.

``python tests/sparql/test_w3c_eval.py [DIALECT ...]`` prints the counts per dialect.
"""

from __future__ import annotations

import sys
from decimal import Decimal

import pytest

from rsep import testing
from rsep.testing import DIALECTS, Result, difference, outcome

if not testing.w3c_dir().is_dir():
    pytest.skip(f"W3C SPARQL 1.1 test suite not found at {testing.w3c_dir()}", allow_module_level=True)

COUNTED = testing.counted()

# The candidates pyoxigraph 0.5.13 itself fails, so they measure nothing here.
NOT_COUNTED = {
    "functions/bnode01",  # BNODE(str) gives the same blank node in every solution
    "property-path/zero_or_one_set_start", "property-path/zero_or_one_set_end",  # a zero-length
    "property-path/zero_or_more_set_start", "property-path/zero_or_more_set_end",  # path to a term not in the data
    "csv-tsv-res/tsv03",  # "-3"^^xsd:negativeInteger comes back as an xsd:integer
}


def test_the_counted_tests_are_the_ones_pyoxigraph_passes():
    candidates = {t.id for t in testing.read_manifests()}
    assert len(candidates) == 213
    assert candidates - {t.id for t in COUNTED} == NOT_COUNTED


@pytest.fixture(autouse=True)
def _loops_stop_early(monkeypatch):
    """A CONSTRUCT whose blank nodes feed it again (constructlist) is a rule loop in
    EP-SPARQL: stopped at 2*10^4 derived triples rather than the engine's 10^6 (40 s of
    derivations for the same RuleLoopError)."""
    from rsep.epsparql import runtime

    monkeypatch.setattr(runtime, "MAX_DERIVED", 20_000)


@pytest.mark.parametrize("test, dialect", [pytest.param(t, d, id=f"{t.id}-{d}")
                                           for d in DIALECTS for t in COUNTED])
def test_w3c_query_in_dialect(test, dialect):
    o = outcome(test, dialect)
    assert o.status in ("passed", "refused", "silent"), f"{test.id} in {dialect}: {o.detail}"


# ---------------------------------------------------------------- the comparison itself

N = "http://www.w3.org/2001/XMLSchema#"


def rows(*dicts):
    return Result("bindings", list(dicts))


def test_numbers_by_value_within_their_datatype():
    one = testing.nt_key(f'"1.0"^^<{N}decimal>')
    assert one == testing.nt_key(f'"1"^^<{N}decimal>') == ("N", N + "decimal", Decimal(1))
    assert one != testing.nt_key(f'"1"^^<{N}integer>')
    assert testing.nt_key(f'"0"^^<{N}boolean>') == testing.nt_key(f'"false"^^<{N}boolean>')
    assert testing.nt_key('"a"@EN') == testing.nt_key('"a"@en')


def test_blank_nodes_up_to_one_bijection():
    a, b = ("B", "a"), ("B", "b")
    x, y = ("B", "x"), ("B", "y")
    one = ("I", "http://e/1")
    assert difference(rows({"s": a, "o": a}, {"s": b, "o": one}),
                      rows({"s": y, "o": one}, {"s": x, "o": x})) is None
    # a -> x in one row and a -> y in the other is no bijection
    assert difference(rows({"s": a}, {"s": a}), rows({"s": x}, {"s": y})) is not None
    # nor are two expected labels onto one actual label
    assert difference(rows({"s": a}, {"s": b}), rows({"s": x}, {"s": x})) is not None


def test_bags_and_order():
    p, q = {"v": ("I", "http://e/p")}, {"v": ("I", "http://e/q")}
    assert difference(rows(p, p), rows(p)) == "expected 2 rows, got 1; missing e.g. {v=<http://e/p>}"
    assert difference(rows(p, q), rows(q, p)) is None
    assert difference(rows(p, q), rows(q, p), in_order=True) is not None


def test_rewrites_keep_the_query_around_the_pattern():
    q = "PREFIX : <http://e/> SELECT ?s (COUNT(*) AS ?n) { ?s :p ?o } GROUP BY ?s ORDER BY ?s"
    s, w = testing.STREAM, testing.WINDOW
    assert testing.rewrite(q, "rspql") == (
        f"PREFIX : <http://e/> SELECT ?s (COUNT(*) AS ?n) FROM NAMED WINDOW <{w}> ON <{s}> [RANGE 1 STEP 1]\n"
        f"{{ WINDOW <{w}> {{ ?s :p ?o }} }} GROUP BY ?s ORDER BY ?s")
    assert testing.rewrite(q, "cqels") == (
        f"PREFIX : <http://e/> SELECT ?s (COUNT(*) AS ?n) {{ STREAM <{s}> [RANGE 1] {{ ?s :p ?o }} }} "
        "GROUP BY ?s ORDER BY ?s")
    assert testing.rewrite(q, "spaseq") == (
        f"PREFIX : <http://e/> SELECT ?s (COUNT(*) AS ?n) FROM STREAM S1 <{s}>\n"
        "WHERE { SEQ (A) DEFINE GPM A ON S1 { ?s :p ?o } } GROUP BY ?s ORDER BY ?s")
    assert testing.rewrite("CONSTRUCT WHERE { ?s ?p ?o }", "match") == (
        f"CONSTRUCT {{ ?s ?p ?o }} FROM NAMED WINDOW <{w}> ON <{s}> [RANGE 1 STEP 1]\n"
        f"EVENT ON <{w}> {{ ?s ?p ?o }} AS E\nWHERE {{ MATCH {{ E }} }}")


if __name__ == "__main__":
    sys.exit(testing.main(["w3c", *sys.argv[1:]]))
