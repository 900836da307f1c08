"""Blocks of 32 or more triple patterns, and EP-SPARQL plans of 32 or more leaves.

The compiled event-local matcher gave each pattern of a block one bit of a mask, and
``1 << k`` compiled with a C-typed ``k`` is C's shift of an ``int``: from the 32nd
pattern on the bits wrapped round, the full mask was never reached and a window of 32
identical patterns ``?s :p ?o`` answered nothing (64 raised OverflowError). Run whole
through the CLI, so the compiled build ``make test`` uses is the one judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

P = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def _stream(path: Path, triples: list[str]) -> Path:
    lines = []
    for i, t in enumerate(triples):
        lines.append(f"<http://e/g{i}> {{ {t} }}")
        lines.append(f'<http://e/g{i}> {P} "2020-01-01T00:00:{i + 1:02d}Z"^^{DT} .')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(*args: str) -> list[dict[str, object]]:
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


@pytest.mark.parametrize("n", [31, 32, 33, 63, 64, 65])
def test_a_window_bgp_of_n_identical_patterns_answers_as_one(tmp_path: Path, n: int) -> None:
    s = _stream(tmp_path / "s.trig", ["<http://e/a> <http://e/p> <http://e/b> .",
                                      "<http://e/c> <http://e/p> <http://e/d> ."])
    q = tmp_path / "q.rq"
    q.write_text(
        "REGISTER RSTREAM <http://e/out> AS SELECT ?s ?o\n"
        "FROM NAMED WINDOW <http://e/w> ON <http://e/s> [RANGE 10000 STEP 1000]\n"
        "WHERE { WINDOW <http://e/w> { " + " ".join(["?s <http://e/p> ?o ."] * n) + " } }\n",
        encoding="utf-8")
    rows = _run(str(q), "--stream", f"http://e/s={s}")
    assert [(r["time"], r["bindings"]) for r in rows] == [
        ("2020-01-01T00:00:01Z", {"s": "<http://e/a>", "o": "<http://e/b>"}),
        ("2020-01-01T00:00:02Z", {"s": "<http://e/a>", "o": "<http://e/b>"}),
        ("2020-01-01T00:00:02Z", {"s": "<http://e/c>", "o": "<http://e/d>"}),
    ]


def test_an_epsparql_union_of_40_leaves_detects_every_leaf(tmp_path: Path) -> None:
    n = 40  # past the 32nd bit of the delta plan's leaf mask
    s = _stream(tmp_path / "s.trig", [f"<http://e/k> <http://e/p{i}> {i} ." for i in range(n)])
    q = tmp_path / "q.rq"
    q.write_text("SELECT ?v WHERE { "
                 + " UNION ".join(f"{{ ?k <http://e/p{i}> ?v }}" for i in range(n)) + " }\n",
                 encoding="utf-8")
    rows = _run(str(q), "--dialect", "epsparql", "--stream", f"http://e/s={s}")
    xsd = "<http://www.w3.org/2001/XMLSchema#integer>"
    assert [(r["from"], r["to"], r["bindings"]) for r in rows] == [
        (f"2020-01-01T00:00:{i + 1:02d}Z", f"2020-01-01T00:00:{i + 1:02d}Z",
         {"v": f'"{i}"^^{xsd}'}) for i in range(n)]
