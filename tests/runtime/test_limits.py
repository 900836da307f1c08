"""--max-eval-seconds holds while an evaluation runs: a runaway query (a three-way cross
product of a 10^4-triple window, counted) ends within the limit plus 2 s, with the
documented error, and the results output before it are kept."""

from __future__ import annotations

import subprocess
import sys
import time

from rsep.testing.snippets import ROOT

Q = """PREFIX : <http://ex/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :s [RANGE 1000 STEP 1000]
WHERE { WINDOW :w { ?a :p ?x . ?b :p ?y . ?c :p ?z } }
"""


def test_a_runaway_evaluation_is_stopped_within_the_limit(tmp_path):
    lines = ["@prefix : <http://ex/> .", "@prefix prov: <http://www.w3.org/ns/prov#> ."]
    # the window closing at 0 holds 10 triples (10^3 rows: fast); the one at 1000, 10^4 (10^12)
    lines += [":g0 prov:generatedAtTime 0 .", ":g0 { " + " ".join(f":a{j} :p {j} ." for j in range(10)) + " }"]
    for i in range(1, 101):
        lines.append(f":g{i} prov:generatedAtTime {i} .")
        lines.append(f":g{i} {{ " + " ".join(f":s{i}_{j} :p {j} ." for j in range(100)) + " }")
    (tmp_path / "s.trig").write_text("\n".join(lines) + "\n")
    (tmp_path / "q.rq").write_text(Q)
    limit = 2
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", str(tmp_path / "q.rq"),
                        "--stream", f"http://ex/s={tmp_path / 's.trig'}", "--until", "1000",
                        "--max-eval-seconds", str(limit)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode == 1
    assert "rsep: error: query q: evaluation at 1000 is still running after the limit of 2.0 s " \
           "(--max-eval-seconds); stopped" in p.stderr
    assert p.stdout.splitlines() == [
        '{"time": 0, "bindings": {"n": "\\"1000\\"^^<http://www.w3.org/2001/XMLSchema#integer>"}}']
    assert took < limit + 2 + 2  # the limit plus 2 s, and the interpreter's start-up
