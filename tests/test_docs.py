"""The documented examples run and give what the docs say."""

from __future__ import annotations

import json

import pytest

from rsep.cli.main import main
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"


@pytest.mark.skipif(not SRBENCH.is_file(), reason="shared data not present")
@pytest.mark.parametrize("language, first", [
    ("rspql", (0, "<http://knoesis.wright.edu/ssw/System_C0947>")),
    ("csparql", (20000, "<http://knoesis.wright.edu/ssw/System_C0837>")),
    ("cqels", (14000, "<http://knoesis.wright.edu/ssw/System_C0837>")),
])
def test_language_examples_run(language, first, capsys):
    q = ROOT / "docs" / "examples" / f"{language}.rq"
    assert main(["run", str(q), "--stream", f"http://example.org/srbench={SRBENCH}"]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (out[0]["time"], out[0]["bindings"]["sensor"]) == first


def _rows(capsys) -> list[tuple]:
    rows = []
    for line in capsys.readouterr().out.splitlines():
        o = json.loads(line)
        b = o["bindings"]
        rows.append((o["time"], o.get("start", o.get("from")), b["sensor"].split("_")[-1][:-1],
                     int(b["before"].split('"')[1]), int(b["after"].split('"')[1])))
    return rows


@pytest.mark.skipif(not SRBENCH.is_file(), reason="shared data not present")
def test_spaseq_example_runs_over_srbench(capsys):
    q = ROOT / "docs" / "examples" / "spaseq.rq"
    assert main(["run", str(q), "--stream", f"http://example.org/srbench={SRBENCH}"]) == 0
    # skip-till-next inside WITHIN's tumbling 10 s windows
    assert _rows(capsys) == [(6000, 0, "C0947", 61, 63), (9000, 3000, "C0947", 62, 64),
                             (20000, 11000, "C1015", 54, 56), (33000, 30000, "C0817", 75, 77)]


@pytest.mark.skipif(not SRBENCH.is_file(), reason="shared data not present")
def test_epsparql_example_runs_over_srbench(capsys):
    q = ROOT / "docs" / "examples" / "epsparql.rq"
    s = f"http://example.org/srbench={SRBENCH}"
    assert main(["run", str(q), "--stream", s]) == 0
    # unrestricted: every pair of readings 2 degrees apart within 10 s
    assert sorted(_rows(capsys)) == [
        (6000, 0, "C0947", 61, 63), (9000, 0, "C0947", 61, 64), (9000, 3000, "C0947", 62, 64),
        (12000, 3000, "C0947", 62, 64), (20000, 11000, "C1015", 54, 56),
        (32000, 26000, "C1122", 78, 80), (32000, 29000, "C1130", 62, 64),
        (33000, 24000, "C0817", 74, 77), (33000, 27000, "C0817", 74, 77),
        (33000, 30000, "C0817", 75, 77)]


@pytest.mark.skipif(not SRBENCH.is_file(), reason="shared data not present")
@pytest.mark.parametrize("policy, want", [
    # each reading used once, the earliest candidate first
    ("chronological", [(6000, 0, "C0947", 61, 63), (9000, 3000, "C0947", 62, 64),
                       (20000, 11000, "C1015", 54, 56), (32000, 26000, "C1122", 78, 80),
                       (33000, 24000, "C0817", 74, 77)]),
    # the latest reading before the warmer one, and the FILTER after that choice: the latest
    # earlier reading of C0947 at 6000 is 62 (3000), not 2 degrees below 63
    ("recent", [(32000, 29000, "C1130", 62, 64), (33000, 30000, "C0817", 75, 77)]),
])
def test_epsparql_example_runs_with_each_policy(policy, want, capsys):
    q = ROOT / "docs" / "examples" / "epsparql.rq"
    s = f"http://example.org/srbench={SRBENCH}"
    assert main(["run", "--dialect", "epsparql", str(q), "--stream", s, "--policy", policy]) == 0
    assert _rows(capsys) == want


def test_semantics_doc_names_only_existing_tests():
    import re

    text = (ROOT / "docs" / "semantics.md").read_text()
    names = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    defined = set()
    for f in (ROOT / "tests").glob("**/test_*.py"):
        defined |= set(re.findall(r"^def (test_[a-z0-9_]+)", f.read_text(), re.M))
    assert names and names <= defined, names - defined


def test_rsepql_example_reproduces_example_11(capsys):
    q = ROOT / "docs" / "examples" / "rsepql.rq"
    s = ROOT / "examples" / "rsepql" / "figure1.trig"
    assert main(["run", str(q), "--stream", f"http://example.org/S={s}", "--report", "at:8,10"]) == 0
    out = sorted(capsys.readouterr().out.splitlines())
    ex = "http://example.org/"
    assert [json.loads(x) for x in out] == [
        {"time": 8, "from": 2, "to": 6, "bindings": {"x": f"<{ex}a1>", "z": f"<{ex}c1>"}},
        {"time": 8, "from": 4, "to": 6, "bindings": {"x": f"<{ex}a2>", "z": f"<{ex}c2>"}}]


def _readme_sessions() -> list[tuple[list[str], list[str]]]:
    """Each ``$ rsep ...`` command of the README (continuation lines joined) with the
    lines printed under it, up to the end of its code block."""
    import shlex

    sessions, lines = [], (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ rsep "):
            i += 1
            continue
        cmd = lines[i][2:]
        while cmd.endswith("\\"):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        out = []
        i += 1
        while i < len(lines) and not lines[i].startswith(("```", "$ ")):
            out.append(lines[i])
            i += 1
        sessions.append((shlex.split(cmd)[1:], out))
    return sessions


@pytest.mark.parametrize("args, expected", _readme_sessions(),
                         ids=lambda v: v[0] if isinstance(v, list) and v and v[0] in
                         ("run", "compare", "explain") else None)
def test_readme_commands_print_what_the_readme_shows(args, expected, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    if any("../shared/data/" in a for a in args) and not SRBENCH.is_file():
        pytest.skip("shared data not present")
    main(args)
    assert capsys.readouterr().out.splitlines() == expected
