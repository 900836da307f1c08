"""Every input is a Source and every output a Sink (rsep.stream.protocol): what
open_stream opens, the dead letter and the result writers; a source of the user's own
plugs into the engine; the README's Python API session runs as shown."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

import pyoxigraph as ox
import pytest

import rsep
from rsep.runtime.engine import Engine, Output
from rsep.runtime.sinks import FormatSink, open_sink
from rsep.stream.event import Event, Rejected
from rsep.stream.protocol import Sink, Source
from rsep.stream.readers import open_stream
from rsep.stream.source import DeadLetter, merge_streams
from rsep.stream.time import TimeKind
from rsep.testing.snippets import ROOT

XSD = "http://www.w3.org/2001/XMLSchema#"

COUPONS = ROOT / "examples" / "coupon" / "coupons.trig"


def _files(tmp_path):
    rdfm = tmp_path / "log.trig"
    rdfm.write_text('<urn:x> <urn:p> 1 .\n<urn:x> <http://www.w3.org/ns/prov#generatedAtTime> 1 .\n'
                    "# @message\n", encoding="utf-8")
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"time": 1, "graph": "urn:g", "triples": []}\n', encoding="utf-8")
    return {"events": str(COUPONS), "rdfm": str(rdfm), "jsonl": str(jsonl),
            "rml": str(ROOT / "examples" / "citybench" / "traffic-182955.rml.ttl"),
            "tcp": "tcp://127.0.0.1:9", "mqtt": "mqtt://127.0.0.1:1883/t"}


@pytest.mark.parametrize("kind", ["events", "rdfm", "jsonl", "rml", "tcp", "mqtt"])
def test_every_reader_open_stream_returns_is_a_source(kind, tmp_path):
    path = _files(tmp_path)[kind]
    if kind == "rml" and not (ROOT.parent / "shared" / "data" / "citybench").is_dir():
        pytest.skip("shared data not present")
    src = open_stream("http://s", path)  # opening reads nothing: live sources connect on iteration
    assert isinstance(src, Source)
    assert src.stream == "http://s"


def test_the_dead_letter_and_the_result_writers_are_sinks(tmp_path):
    dead = DeadLetter(tmp_path / "dead.jsonl")
    assert isinstance(dead, Sink)
    dead.write(Rejected("http://s", "f.trig", 3, 7, "expected '}'", "<x> {"))
    dead.close()
    assert dead.count == 1
    assert '"line": 3, "column": 7' in (tmp_path / "dead.jsonl").read_text(encoding="utf-8")

    out = tmp_path / "out.jsonl"
    sink = open_sink(str(out), "jsonl")
    assert isinstance(sink, Sink) and isinstance(sink, FormatSink)
    sink.write(Output("q", 5, TimeKind.ABSTRACT, bindings={"x": "<urn:a>"}, variables=("x",)))
    sink.close()
    assert sink.out.closed  # it opened the file, so closing the sink closed it
    assert out.read_text(encoding="utf-8") == '{"time": 5, "bindings": {"x": "<urn:a>"}}\n'


def test_an_unknown_format_is_refused_before_the_output_file_is_created(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        open_sink(str(tmp_path / "out.xml"), "xml")
    assert not (tmp_path / "out.xml").exists()


class Counter:
    """A source of the user's own: an event per time unit, each graph one triple."""

    stream = "http://counter"

    def __iter__(self):
        for t in range(1, 4):
            value = ox.Literal(str(t), datatype=ox.NamedNode(XSD + "integer"))
            yield Event("http://counter", f"urn:e{t}", t, t,
                        (ox.Triple(ox.NamedNode("urn:c"), ox.NamedNode("urn:value"), value),),
                        origin=f"counter:{t}")
        yield Rejected("http://counter", "counter", 4, 1, "sensor offline", "")


def test_a_source_of_ones_own_runs_through_the_engine():
    assert isinstance(Counter(), Source)
    engine = Engine()
    engine.register("""PREFIX : <urn:>
        SELECT ?v FROM NAMED WINDOW :w ON <http://counter> [RANGE 2 STEP 1]
        WHERE { WINDOW :w { <urn:c> <urn:value> ?v } }""", default_name="q")
    dead = DeadLetter()
    got = [(o.time, o.bindings["v"].split('"')[1]) for o in engine.run(merge_streams([Counter()], dead))]
    assert sorted(got) == [(1, "1"), (2, "1"), (2, "2"), (3, "2"), (3, "3")]
    assert dead.count == 1 and dead.items[0].reason == "sensor offline"


def test_the_readme_python_session_runs(monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"## Python API\n\n```python\n(.*?)```", text, re.S)
    assert code is not None
    monkeypatch.chdir(ROOT)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(code.group(1)), {})  # noqa: S102 - the README's own code
    lines = buf.getvalue().splitlines()
    assert lines and all(re.fullmatch(r"\d+ \{.*'?shop'?.*\}", ln) for ln in lines)
    assert rsep.open_stream is open_stream and rsep.Source is Source
