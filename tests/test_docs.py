"""The documented examples run and give what the docs say."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from rsep.cli.main import main

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


def test_semantics_doc_names_only_existing_tests():
    import re

    text = (ROOT / "docs" / "semantics.md").read_text()
    names = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    defined = set()
    for f in (ROOT / "tests").glob("test_*.py"):
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
