"""The reader's path for chunks of events of k triples each (StreamFile._uniform): whatever a
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


def event_text(i: int, v: str, k: int = 1) -> str:
    g = f":g{i}"
    time = f"{g} prov:generatedAtTime {i} .\n"
    body = " ".join(f":c{i % 3} :p{j} {i * 7 % 11} ." for j in range(k))
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


def without_uniform(p, chunk_size):
    """The reader as it was before _uniform: every chunk grouped into runs."""
    f = StreamFile(p, "http://s", chunk_size=chunk_size)
    f._uniform = lambda *a: None  # type: ignore[method-assign]
    return f


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(variants=st.lists(st.sampled_from(VARIANTS), min_size=1, max_size=40),
       chunk_size=st.sampled_from([16, 100, 300, 1 << 16]), k=st.sampled_from([1, 1, 2, 5]))
def test_uniform_chunks_read_as_grouped_chunks_read(tmp_path, variants, chunk_size, k):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, v, k) for i, v in enumerate(variants)))
    fast, ref = summary(StreamFile(p, "http://s", chunk_size=chunk_size)), summary(without_uniform(p, chunk_size))
    if "blank" in variants:  # blank node labels are scoped per event: compare them by position only
        fast = [x[:6] if x[0] == "Event" else x for x in fast]
        ref = [x[:6] if x[0] == "Event" else x for x in ref]
    assert fast == ref


def test_an_event_in_two_blocks_named_by_a_prefixed_name_is_located_at_its_first(tmp_path):
    # (two blocks of one graph send the chunk to the record path, which located a block by
    # its name only when written as a full IRI, else at the batch's first line, the time triple's)
    p = tmp_path / "s.trig"
    p.write_text(HEAD + event_text(0, "plain") + event_text(1, "repeat"))
    for chunk_size in (16, 1 << 16):
        events = list(StreamFile(p, "http://s", chunk_size=chunk_size))
        assert [(e.graph, e.origin.rsplit(":", 1)[1], len(e.triples)) for e in events] == [
            ("http://example.org/g0", "5", 1), ("http://example.org/g1", "7", 2)]


@pytest.mark.parametrize("k", [1, 5])
def test_a_stream_of_k_triple_events_takes_the_uniform_path(tmp_path, monkeypatch, k):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, "plain", k) for i in range(3000)))
    taken = []
    one = files.StreamFile._uniform

    def spy(self, *a):
        got = one(self, *a)
        taken.append(got is not None)
        return got
    monkeypatch.setattr(files.StreamFile, "_uniform", spy)

    def refuse(*a, **k):  # the grouped paths are not needed
        raise AssertionError("grouped path taken")
    monkeypatch.setattr(assembly.Assembly, "runs", refuse)
    monkeypatch.setattr(assembly.Assembly, "points", refuse)
    events = list(StreamFile(p, "http://s"))
    assert [e.start for e in events] == list(range(3000))
    assert {len(e.triples) for e in events} == {k}
    assert [e.origin for e in events[:2]] == [f"{p}:5", f"{p}:7"]
    assert len(taken) > 1 and all(taken)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("plain", "typed", "iri")])
def test_a_chunk_the_uniform_path_cannot_take_is_grouped(tmp_path, variant):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(event_text(i, variant if i == 5 else "plain") for i in range(10)))
    fast = StreamFile(p, "http://s")
    refused = []
    one = fast._uniform
    fast._uniform = lambda *a: refused.append(r := one(*a)) or r  # type: ignore[method-assign]
    got = summary(fast)
    want = summary(without_uniform(p, 1 << 16))
    if variant == "blank":
        got, want = [x[:6] for x in got], [x[:6] for x in want]
    assert got == want
    # (a chunk that does not parse never gets there)
    assert refused == ([] if variant == "bad" else [None])


# Strides of k triples whose graph names are read only at a stride's first three positions
# (time quad, first and last triple): a default-graph triple inside a stride is caught by
# the last position or by the count of blocks, and the chunk goes the grouped way.
STRAYS = {
    # [D, g0, g0, D, g1, D', D, g2, g2]: the stray at a stride's last position
    "last": (":g0 prov:generatedAtTime 0 .\n:g0 { :c :p 1 . :c :q 1 . }\n"
             ":g1 prov:generatedAtTime 1 .\n:g1 { :c :p 2 . }\n:c :label \"x\" .\n"
             ":g2 prov:generatedAtTime 2 .\n:g2 { :c :p 3 . :c :q 3 . }\n"),
    # [D, g0 x3, D, g1, D', g1, D, g2 x3]: inside a stride, between two blocks of one graph
    "middle": (":g0 prov:generatedAtTime 0 .\n:g0 { :c :p 1 . :c :q 1 . :c :r 1 . }\n"
               ":g1 prov:generatedAtTime 1 .\n:g1 { :c :p 2 . }\n:c :label \"x\" .\n:g1 { :c :q 2 . }\n"
               ":g2 prov:generatedAtTime 2 .\n:g2 { :c :p 3 . :c :q 3 . :c :r 3 . }\n"),
    # [D, g0 x3, D, g1, g3, g1?]: two graphs in one stride, no stray
    "two graphs": (":g0 prov:generatedAtTime 0 .\n:g0 { :c :p 1 . :c :q 1 . :c :r 1 . }\n"
                   ":g1 prov:generatedAtTime 1 .\n:g1 { :c :p 2 . }\n:g3 { :c :q 2 . :c :r 2 . }\n"
                   ":g2 prov:generatedAtTime 2 .\n:g2 { :c :p 3 . :c :q 3 . :c :r 3 . }\n"),
}


@pytest.mark.parametrize("shape", list(STRAYS))
def test_a_stride_with_a_stray_quad_or_a_second_block_is_grouped(tmp_path, shape):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + STRAYS[shape])
    fast = StreamFile(p, "http://s")
    refused = []
    one = fast._uniform
    fast._uniform = lambda *a: refused.append(r := one(*a)) or r  # type: ignore[method-assign]
    assert summary(fast) == summary(without_uniform(p, 1 << 16))
    assert refused == [None]


# Time objects of every literal shape: an unquoted chunk's all-digit literal is an INTEGER
# token, so the fast paths skip its datatype there (Assembly.quoted); a quoted one is read.
TIMES = ("{i}", '"{i}"^^xsd:integer', '"{i}"^^xsd:long', '"{i}"', "{i}.0", "{i}e0", "true",
         '"{i}"^^xsd:decimal', "+{i}", '"0{i}"^^xsd:integer')


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(times=st.lists(st.sampled_from(TIMES), min_size=1, max_size=30),
       unquoted=st.booleans(), chunk_size=st.sampled_from([16, 200, 1 << 16]))
def test_time_literals_read_as_the_record_reader_reads_them(tmp_path, times, unquoted, chunk_size):
    if unquoted:  # mostly chunks without a quote, so that the fast paths skip the datatype
        times = [t for t in times if '"' not in t] or ["{i}"]
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(f":g{i} prov:generatedAtTime {t.format(i=i)} .\n:g{i} {{ :c :p {i} . }}\n"
                                for i, t in enumerate(times)))
    slow = StreamFile(p, "http://s")
    slow._fast = False
    assert summary(StreamFile(p, "http://s", chunk_size=chunk_size)) == summary(slow)
