"""The reader's path for chunks of one-triple events (StreamFile._one_triple): whatever a
chunk holds, the events, lines and rejections are the record reader's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.stream import assembly, files
from rsep.stream.event import Event
from rsep.stream.files import StreamFile

HEAD = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""

# Each variant breaks one thing the one-triple path relies on; "plain" keeps its shape.
VARIANTS = ("plain", "plain", "plain", "typed", "brace", "blank", "two", "empty", "above",
            "repeat", "after", "untimed", "extra", "bad", "datetime", "comment", "iri")


def event_text(i: int, v: str) -> str:
    g = f":g{i}"
    time = f"{g} prov:generatedAtTime {i} .\n"
    body = f":c{i % 3} :p {i * 7 % 11} ."
    if v == "typed":
        time = f'{g} prov:generatedAtTime "{i}"^^xsd:integer .\n'
    elif v == "brace":
        body = ':c :p "a { and } in a string" .'
    elif v == "blank":
        body = ":c :p _:x ."
    elif v == "two":
        body = f":c :p {i} . :c :q {i} ."
    elif v == "empty":
        body = ""
    elif v == "above":
        return time + f"{g}\n{{ {body} }}\n"
    elif v == "repeat":  # one event in two adjacent blocks of its graph
        return time + f"{g} {{ {body} }}\n{g} {{ :c :q {i} . }}\n"
    elif v == "after":
        return f"{g} {{ {body} }}\n" + time
    elif v == "untimed":
        time = ""
    elif v == "extra":
        time = f":c :label \"c\" .\n{time}"
    elif v == "bad":
        body = ":c :p ."
    elif v == "datetime":
        time = f'{g} prov:generatedAtTime "1970-01-01T00:00:{i % 60:02d}Z"^^xsd:dateTime .\n'
    elif v == "comment":
        time = f"# {{ a comment }}\n{time}"
    elif v == "iri":
        g = f"<http://example.org/g{i}>"
        time = f"{g} <http://www.w3.org/ns/prov#generatedAtTime> {i} .\n"
    return time + f"{g} {{ {body} }}\n"


def summary(items):
    return [(type(i).__name__, i.graph, i.start, i.end, i.kind, i.origin, tuple(map(str, i.triples)))
            if isinstance(i, Event) else (type(i).__name__, i.line, i.column, i.reason, i.text)
            for i in items]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(variants=st.lists(st.sampled_from(VARIANTS), min_size=1, max_size=40),
       chunk_size=st.sampled_from([16, 100, 300, 1 << 16]))
def test_one_triple_chunks_read_as_the_record_reader_reads_them(tmp_path, variants, chunk_size):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, v) for i, v in enumerate(variants)))
    slow = StreamFile(p, "http://s")
    slow._fast = False
    blank = [i for i, v in enumerate(variants) if v == "blank"]
    fast, ref = summary(StreamFile(p, "http://s", chunk_size=chunk_size)), summary(slow)
    if blank:  # blank node labels are scoped per event: compare them by position only
        fast = [x[:6] if x[0] == "Event" else x for x in fast]
        ref = [x[:6] if x[0] == "Event" else x for x in ref]
    assert fast == ref


def test_a_stream_of_one_triple_events_takes_the_one_triple_path(tmp_path, monkeypatch):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, "plain") for i in range(3000)))
    taken = []
    one = files.StreamFile._one_triple

    def spy(self, *a):
        got = one(self, *a)
        taken.append(got is not None)
        return got
    monkeypatch.setattr(files.StreamFile, "_one_triple", spy)

    def refuse(*a, **k):  # the grouped paths are not needed
        raise AssertionError("grouped path taken")
    monkeypatch.setattr(assembly.Assembly, "runs", refuse)
    monkeypatch.setattr(assembly.Assembly, "points", refuse)
    events = list(StreamFile(p, "http://s"))
    assert [e.start for e in events] == list(range(3000))
    assert [e.origin for e in events[:2]] == [f"{p}:5", f"{p}:7"]
    assert len(taken) > 1 and all(taken)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("plain", "typed", "iri")])
def test_a_chunk_the_one_triple_path_cannot_take_is_grouped(tmp_path, variant):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, variant if i == 5 else "plain") for i in range(10)))
    slow = StreamFile(p, "http://s")
    slow._fast = False
    fast = StreamFile(p, "http://s")
    refused = []
    one = fast._one_triple
    fast._one_triple = lambda *a: refused.append(r := one(*a)) or r  # type: ignore[method-assign]
    got = summary(fast)
    want = summary(slow)
    if variant == "blank":
        got, want = [x[:6] for x in got], [x[:6] for x in want]
    assert got == want
    assert refused == [None] or variant in ("bad",)  # a chunk that does not parse never gets there
