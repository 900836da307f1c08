"""``rsep run --format table`` as a user reads it (issue 53, point 4): IRIs by the query's
PREFIXes and ``--prefixes``, and an event query's matches told apart by their interval."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rsep.testing.snippets import ROOT

STREAM = """@prefix : <http://e.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:g1 prov:generatedAtTime 1 .
:g1 { :sensor1 :temp 10 . :sensor1 :at "2026-01-01"^^<http://www.w3.org/2001/XMLSchema#date> . }
:g2 prov:generatedAtTime 2 .
:g2 { :sensor1 :temp 10 . <http://e.org/a/b> :temp 10 . }
:g3 prov:generatedAtTime 3 .
:g3 { :sensor1 :temp 12 . <http://e.org/a/b> :temp 11 . }
"""

SPASEQ = """PREFIX : <http://e.org/>
SELECT ?s ?v1 ?v2 WITHIN 100
FROM STREAM S1 <http://e.org/s>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?s :temp ?v1 . }
  DEFINE GPM B ON S1 { ?s :temp ?v2 . FILTER (?v2 > ?v1) }
}
"""

EPSPARQL = """PREFIX : <http://e.org/>
SELECT ?s ?v2 WHERE { { ?s :temp ?v1 } SEQ { ?s :temp ?v2 } FILTER (?v2 > ?v1) }
"""


def table(tmp_path: Path, query: str, *args: str, code: int = 0) -> list[str]:
    q, s = tmp_path / "q.rq", tmp_path / "s.trig"
    q.write_text(query)
    s.write_text(STREAM)
    r = subprocess.run([sys.executable, "-W", "ignore", "-m", "rsep.cli.main", "run", str(q),
                        "--stream", f"http://e.org/s={s}", "--format", "table", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == code, r.stderr
    return (r.stdout if code == 0 else r.stderr).splitlines()


def test_spaseq_matches_of_the_same_bindings_are_distinct_rows_by_their_interval(tmp_path):
    assert table(tmp_path, SPASEQ) == [
        "-- @ 3 (3 rows)",
        "from  to  start  s                   v1  v2",
        "1     3   1      :sensor1            10  12",
        "2     3   2      <http://e.org/a/b>  10  11",
        "2     3   2      :sensor1            10  12"]


def test_epsparql_complex_events_show_from_and_to(tmp_path):
    assert table(tmp_path, EPSPARQL, "--dialect", "epsparql") == [
        "-- @ 3 (3 rows)",
        "from  to  s                   v2",
        "1     3   :sensor1            12",
        "2     3   :sensor1            12",
        "2     3   <http://e.org/a/b>  11"]


def test_rsepql_match_shows_from_and_to_not_its_interval_variables():
    r = subprocess.run([sys.executable, "-W", "ignore", "-m", "rsep.cli.main", "run",
                        "docs/examples/rsepql.rq", "--stream",
                        "http://example.org/S=examples/rsepql/figure1.trig", "--report", "at:8,10",
                        "--format", "table"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (r.returncode, r.stdout.splitlines()) == (0, [
        "-- @ 8 (2 rows)",
        "from  to  x    z",
        "4     6   :a2  :c2",
        "2     6   :a1  :c1"])


def test_prefixes_file_wins_and_prefixes_datatypes_an_iri_no_prefix_fits_stays_whole(tmp_path):
    query = "PREFIX : <http://e.org/>\nSELECT ?s ?d WHERE { STREAM :s [RANGE 5] { ?s :at ?d } }\n"
    assert table(tmp_path, query) == [
        "-- @ 1 (1 row)",
        "s         d",
        ':sensor1  "2026-01-01"^^<http://www.w3.org/2001/XMLSchema#date>']
    prefixes = tmp_path / "prefixes.ttl"
    prefixes.write_text("# the longest namespace wins\n@prefix sen: <http://e.org/sensor> .\n"
                        "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n")
    assert table(tmp_path, query, "--prefixes", str(prefixes)) == [
        "-- @ 1 (1 row)",
        "s      d",
        'sen:1  "2026-01-01"^^xsd:date']
    assert table(tmp_path, query, "--prefixes", str(tmp_path / "none.ttl"), code=1) == [
        f"rsep: --prefixes: [Errno 2] No such file or directory: '{tmp_path / 'none.ttl'}'"]
