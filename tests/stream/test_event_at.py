"""``rsep.Event.at``: events made by hand for the push API, and the README's example of it."""

from __future__ import annotations

import contextlib
import io
import re

import pyoxigraph as ox
import pytest

from rsep import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import ROOT

S = "http://example.org/sensors"


def test_a_point_an_interval_and_triples_as_turtle_or_terms() -> None:
    e = Event.at(7, "@prefix : <http://example.org/> . :s1 :temp 31 ; :unit :C .", stream=S,
                 graph="http://example.org/g7")
    assert (e.stream, e.graph, e.start, e.end, e.time, e.kind) == (
        S, "http://example.org/g7", 7, 7, 7, TimeKind.ABSTRACT)
    assert [str(t) for t in e.triples] == [
        '<http://example.org/s1> <http://example.org/temp> "31"^^<http://www.w3.org/2001/XMLSchema#integer>',
        "<http://example.org/s1> <http://example.org/unit> <http://example.org/C>"]
    t = ox.Triple(ox.NamedNode("http://e/a"), ox.NamedNode("http://e/p"), ox.Literal("x"))
    i = Event.at(9, [t], stream=S, start=4, kind=TimeKind.DATETIME)
    assert (i.start, i.end, i.triples, i.kind) == (4, 9, (t,), TimeKind.DATETIME)
    # without a graph name, each event gets one of its own
    a, b = Event.at(1, [t], stream=S), Event.at(1, [t], stream=S)
    assert a.graph != b.graph and a.graph.startswith(S + "/event/")


def test_what_cannot_be_an_event_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError, match="start 5 is after time 3"):
        Event.at(3, [], stream=S, start=5)
    with pytest.raises(TypeError, match="time must be an int, not float"):
        Event.at(1.5, [], stream=S)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not str"):
        Event.at(1, ["<a> <b> <c>"], stream=S)  # type: ignore[list-item]
    with pytest.raises(SyntaxError) as e:
        Event.at(1, "<http://e/a> <http://e/p> .", stream=S)
    assert (e.value.lineno, e.value.offset) == (1, 27)


def test_the_readmes_push_example_prints_what_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "Event.at" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 (the README's own code)
    assert out.getvalue().splitlines() == [
        '5 "34"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '10 "34"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '10 "31"^^<http://www.w3.org/2001/XMLSchema#integer>',
    ]


def test_the_readmes_push_example_runs_as_a_script(tmp_path) -> None:
    # as a user runs it: a fresh interpreter, the README's block as a file, from the checkout
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "Event.at" in b)
    script = tmp_path / "push.py"
    script.write_text(code)
    got = subprocess.run([sys.executable, "-W", "ignore::UserWarning", str(script)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert (got.returncode, got.stderr) == (0, "")
    assert got.stdout.splitlines() == [
        '5 "34"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '10 "34"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '10 "31"^^<http://www.w3.org/2001/XMLSchema#integer>',
    ]
