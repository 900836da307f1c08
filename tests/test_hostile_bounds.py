"""Hostile input and faults (issue 52, finding 7): what one input or one query can make rsep
hold is bounded as documented, and stops with a located message at the bound, driving the
real ``rsep run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rsep.testing.snippets import ROOT

HEAD = "@prefix : <http://e/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


def rsep_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def lines(err: str) -> list[str]:
    """stderr without the warnings a stale compiled build gives (tests may run pure)."""
    return [x for x in err.splitlines() if "UserWarning" not in x and not x.startswith("  ")]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------ EP-SPARQL's rule cap


def _instants(tmp_path: Path, n: int, *times: int) -> Path:
    return write(tmp_path, "s.trig", HEAD + "".join(
        f":g{t} prov:generatedAtTime {t} .\n:g{t} {{ "
        + " ".join(f":s{t}_{i} :p {i} ." for i in range(n)) + " }\n" for t in times))


def test_the_rule_cap_holds_exactly_at_one_instant(tmp_path):
    # before: the cap was looked at after each round, so one round of a cross product
    # derived 2.4 x 10^6 triples (2 GB) past a cap of 10^6; and there was no flag
    cross = write(tmp_path, "rule.rq", "PREFIX : <http://e/>\n"
                  "CONSTRUCT { ?a :r ?b } WHERE { ?a :p ?x . ?b :p ?y }\n")
    s = _instants(tmp_path, 100, 1)  # one instant: 100 x 100 = 10,000 triples, one round
    p = rsep_run(str(cross), "--dialect", "epsparql", "--stream", f"http://s={s}",
                 "--max-derived", "9999")
    assert p.returncode == 1
    assert lines(p.stderr) == ["rsep: the CONSTRUCT rules (rule) derive more than 9,999 "
                               "triples at time 1 (round 1); stopped at the cap, before the "
                               "first over it (--max-derived)"]
    assert p.stdout == ""
    p = rsep_run(str(cross), "--dialect", "epsparql", "--stream", f"http://s={s}",
                 "--max-derived", "10000")
    assert p.returncode == 0, p.stderr[-500:]
    assert len(p.stdout.splitlines()) == 10_000


def _peak_kb(*args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """`rsep run`'s peak resident set (KiB), read by a parent of its own (its children's
    maximum is this run's alone, not this test process's other children's)."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stderr.write(p.stderr)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(p.returncode)\n")
    p = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "rsep.cli.main", "run", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    return int(p.stdout.split()[-1]), p


def test_the_rule_cap_bounds_memory_not_only_the_triples(tmp_path):
    # before: a round's solutions were a list before the cap was looked at, so 500 x 500
    # matches took ~250,000 solutions in memory (2.1 GB for 1,500 x 1,500 at any cap);
    # now they are read as they are made and the run stops at the cap as lightly as a tiny one
    cross = write(tmp_path, "rule.rq", "PREFIX : <http://e/>\n"
                  "CONSTRUCT { ?a :r ?b } WHERE { ?a :p ?x . ?b :p ?y }\n")
    small = _instants(tmp_path, 20, 1)
    base, p = _peak_kb(str(cross), "--dialect", "epsparql", "--stream", f"http://s={small}",
                       "--max-derived", "300")
    assert p.returncode == 1 and "derive more than 300 triples at time 1" in p.stderr
    big = write(tmp_path, "big.trig", _instants(tmp_path, 500, 1).read_text())
    peak, p = _peak_kb(str(cross), "--dialect", "epsparql", "--stream", f"http://s={big}",
                       "--max-derived", "300")
    assert p.returncode == 1 and "derive more than 300 triples at time 1" in p.stderr
    assert peak - base < 40_000, (base, peak)  # KiB; before: ~150,000 more


def test_the_rule_cap_counts_one_instant_not_the_whole_run(tmp_path):
    # before: the count ran over the whole run, so a long stream's rules, a few triples
    # at each instant, met the cap of one instant
    copy = write(tmp_path, "rule.rq", "PREFIX : <http://e/>\n"
                 "CONSTRUCT { ?a :r ?x } WHERE { ?a :p ?x }\n")
    s = _instants(tmp_path, 100, 1, 2, 3)
    p = rsep_run(str(copy), "--dialect", "epsparql", "--stream", f"http://s={s}",
                 "--max-derived", "150")
    assert p.returncode == 0, p.stderr[-500:]
    assert [json.loads(x)["time"] for x in p.stdout.splitlines()] == [1] * 100 + [2] * 100 + [3] * 100


def test_the_max_derived_default_is_documented(tmp_path):
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", "--help"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    text = " ".join(p.stdout.split())
    assert "--max-derived N EP-SPARQL CONSTRUCT rules: at most N triples derived at one " \
           "instant (default 1,000,000)" in text
    assert "--max-matches N SPASEQ queries: at most N matches at one instant (default " \
           "1,000,000)" in text


# ------------------------------------------------------------------ SPASEQ's output


SPASEQ = """PREFIX : <http://e/>
SELECT ?a ?b ?c FROM STREAM S <http://s> WHERE { SEQ (A: B: C)
DEFINE GPM A ON S { ?x :p ?a } DEFINE GPM B ON S { ?y :p ?b } DEFINE GPM C ON S { ?z :p ?c } }
"""


def test_spaseq_matches_of_one_instant_are_bounded(tmp_path):
    # skip-till-any over n events matching every GPM: C(t - 1, 2) matches complete at t, so
    # the output of one instant grows without bound (before: no bound, no flag)
    s = write(tmp_path, "s.trig", HEAD + "".join(
        f":g{t} prov:generatedAtTime {t} .\n:g{t} {{ :a :p {t} . }}\n" for t in range(1, 48)))
    q = write(tmp_path, "q.rq", SPASEQ)
    p = rsep_run(str(q), "--stream", f"http://s={s}", "--max-matches", "1034")
    assert p.returncode == 1
    # C(46, 2) = 1,035 matches complete at 47; the instants before gave C(t - 1, 2) each
    assert lines(p.stderr) == ["rsep: query q: more than 1,034 matches at 47 "
                               "(--max-matches); stopped at the bound, before enumerating "
                               "the rest"]
    got = [json.loads(x)["time"] for x in p.stdout.splitlines()]
    assert len(got) == sum(k * (k - 1) // 2 for k in range(46)) and got[-1] == 46
    p = rsep_run(str(q), "--stream", f"http://s={s}", "--max-matches", "1035")
    assert p.returncode == 0, p.stderr[-500:]
    assert len(p.stdout.splitlines()) == sum(k * (k - 1) // 2 for k in range(47))


# ------------------------------------------------------------------ nesting in a record


RSP = """PREFIX : <http://e/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON <http://s> [RANGE 1 STEP 1]
WHERE { WINDOW :w { ?s ?p ?o } }
"""


def test_a_collection_nested_a_million_deep_is_a_dead_letter_not_gigabytes(tmp_path):
    # before: 2 x 10^6 triples of one event: 106 s and 4.57 GB peak here (1.34 GB in the
    # finding), then the query's results over --max-results ended the run
    n = 10**6
    s = write(tmp_path, "s.trig", HEAD + ":g1 prov:generatedAtTime 1 .\n:g1 { :a :p 1 . }\n"
              ":g2 prov:generatedAtTime 2 .\n:g2 { :a :p " + "( " * n + ") " * n + ". }\n"
              # 256 levels are read; parentheses in strings, IRIs and comments do not nest
              ":g3 prov:generatedAtTime 3 .\n:g3 { :a :p " + "(" * 256 + ")" * 256 + " . "
              ':a :q "' + "(" * 1000 + '" . :a :r <http://e/' + "(" * 300 + "> . # " + "(" * 300
              + "\n}\n")
    q = write(tmp_path, "q.rq", RSP)
    p = rsep_run(str(q), "--stream", f"http://s={s}", timeout=30)
    assert p.returncode == 3, p.stderr[-500:]
    assert lines(p.stderr)[0] == (f"rejected: {s}:6:{13 + 2 * 256}: collections, blank "
                                  "nodes or quoted triples nested deeper than 256 levels here "
                                  "(a record holding them is not read)")
    n3 = 1 + 2 * 255 + 2  # :p, rdf:first and rdf:rest for each level but the () inside; :q, :r
    assert [json.loads(x)["bindings"]["n"] for x in p.stdout.splitlines()] == [
        f'"{k}"^^<http://www.w3.org/2001/XMLSchema#integer>' for k in (1, 0, n3)]
