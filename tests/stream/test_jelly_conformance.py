"""Jelly-RDF's conformance cases (jelly-protobuf's test/rdf, ../shared/data/jelly-conformance),
one test per entry of its two manifests, through rsep's Jelly reader and writer
(rsep.stream.jelly: one frame, one RDF Message).

- from_jelly, positive: the stream read as rsep reads a Jelly log gives, frame by frame,
  the quads of the case's out_NNN file (up to blank node renaming). Negative: rejected,
  with the frame (and byte offset) where it fails.
- to_jelly, positive: rsep's writer, given the case's frames, writes a stream that reads
  back, frame by frame, as the case's out.jelly does. rsep's writer sets its own stream
  options (a QUADS stream of DATASETS, its own lookup table sizes): the case's
  stream_options.jelly is not applied (docs/semantics.md "RDF Message Logs").
  Negative (a typed literal with the datatype table off; a name table under 8): options rsep
  never writes: checked on the options its stream carries, with the frames read back.
- RDF-star and generalized RDF: pyoxigraph (RDF 1.2) has triple terms as objects only and
  no literal subjects, blank node predicates or quoted triples as subjects. A case using
  them passes as above or is refused: from_jelly with the frame where it fails, to_jelly
  by pyoxigraph's parser naming the line of the input file. Never read altered.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyoxigraph as ox
import pytest
from test_rdf_messages_suite import isomorphic

from rsep.stream.event import Rejected
from rsep.stream.jelly import JellyWriter
from rsep.stream.messages import Message, MessageLog
from rsep.testing.snippets import ROOT

SUITE = ROOT.parent / "shared" / "data" / "jelly-conformance" / "test" / "rdf"
MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
JT = "https://w3id.org/jelly/dev/tests/vocab#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
LOCATED = re.compile(r"^frame \d+( \(byte \d+\))?: ")


def _list(g: ox.Store, head: ox.NamedNode | ox.BlankNode) -> list:
    out = []
    while head != ox.NamedNode(RDF + "nil"):
        out.append(next(g.quads_for_pattern(head, ox.NamedNode(RDF + "first"), None)).object)
        head = next(g.quads_for_pattern(head, ox.NamedNode(RDF + "rest"), None)).object
    return out


def _files(g: ox.Store, entry, pred: str, folder: Path) -> list[Path]:
    objs = [q.object for q in g.quads_for_pattern(entry, ox.NamedNode(MF + pred), None)]
    if not objs:
        return []
    (o,) = objs
    items = [o] if isinstance(o, ox.NamedNode) and not o.value.endswith("/") and \
        not list(g.quads_for_pattern(o, ox.NamedNode(RDF + "first"), None)) else _list(g, o)
    base = f"https://w3id.org/jelly/dev/tests/rdf/{folder.name}/"
    return [folder / i.value.removeprefix(base) for i in items]


def _entries(direction: str) -> list[tuple[str, dict]]:
    folder = SUITE / direction
    g = ox.Store()
    g.load(path=str(folder / "manifest.ttl"), format=ox.RdfFormat.TURTLE,
           base_iri=f"https://w3id.org/jelly/dev/tests/rdf/{direction}/")
    (manifest,) = [q.subject for q in g.quads_for_pattern(None, ox.NamedNode(RDF + "type"),
                                                          ox.NamedNode(MF + "Manifest"))]
    entries = _list(g, next(g.quads_for_pattern(manifest, ox.NamedNode(MF + "entries"), None)).object)
    out = []
    for e in entries:
        types = {q.object.value for q in g.quads_for_pattern(e, ox.NamedNode(RDF + "type"), None)}
        out.append((f"{direction}/{e.value.rsplit(direction + '/', 1)[1]}", {
            "positive": JT + "TestPositive" in types,
            "requires": {q.object.value.removeprefix(JT + "requirement")
                         for q in g.quads_for_pattern(e, ox.NamedNode(MF + "requires"), None)},
            "action": _files(g, e, "action", folder),
            "result": _files(g, e, "result", folder),
        }))
    return out


FROM = _entries("from_jelly")
TO = _entries("to_jelly")


def _expected(path: Path) -> list[ox.Quad] | SyntaxError:
    fmt = ox.RdfFormat.N_QUADS if path.suffix == ".nq" else ox.RdfFormat.N_TRIPLES
    text = path.read_text()
    try:
        return list(ox.parse(text, format=fmt))
    except SyntaxError as e:
        if "<<" not in text:
            return e
    # RDF-star's quoted triple << s p o >> is RDF 1.2's triple term <<( s p o )>> (pyoxigraph
    # reads << >> as a reifier); what still fails holds a quoted triple as a subject
    try:
        return list(ox.parse(text.replace("<<", "<<(").replace(">>", ")>>"), format=fmt))
    except SyntaxError as e:
        return e


def _read(path: Path) -> list[Message | Rejected]:
    data = path.read_bytes()
    from pyjelly.parse.ioutils import delimited_jelly_hint

    # (triples_rdf_1_1/pos_003 is one frame, not delimited: Jelly's other file form, as
    # POST /events reads it)
    return list(MessageLog(str(path), "urn:s", fmt="jelly", source=[data],
                           delimited=len(data) < 3 or delimited_jelly_hint(data[:3])).messages())


def _extended(case: dict) -> bool:
    return bool(case["requires"] & {"RdfStar", "GeneralizedRdf"})


@pytest.mark.parametrize("case", [c for _, c in FROM], ids=[i for i, _ in FROM])
def test_from_jelly(case: dict) -> None:
    (path,) = case["action"]
    got = _read(path)
    bad = [m for m in got if isinstance(m, Rejected)]
    if not case["positive"]:
        assert bad, f"read without an error: {[len(m.quads) for m in got]}"
        assert all(LOCATED.match(r.reason) for r in bad), [r.reason for r in bad]
        return
    want = [_expected(p) for p in case["result"]]
    if _extended(case) and (bad or any(isinstance(w, SyntaxError) for w in want)):
        # refused: where pyoxigraph cannot hold the terms, located
        assert bad, "expected output pyoxigraph cannot parse, and yet the stream was read"
        assert all(LOCATED.match(r.reason) for r in bad), [r.reason for r in bad]
        return
    assert not bad, [r.reason for r in bad]
    assert len(got) == len(want)
    for i, (m, w) in enumerate(zip(got, want, strict=True)):
        assert isinstance(m, Message) and not isinstance(w, SyntaxError)
        assert isomorphic(m.quads, w), (i, [str(q) for q in m.quads], [str(q) for q in w])


def _options(data: bytes):
    from pyjelly import jelly

    from rsep.stream.jelly import Delimited

    (_, first), *_ = Delimited().feed(data)
    return jelly.RdfStreamFrame.FromString(first).rows[0].options


@pytest.mark.parametrize("case", [c for _, c in TO], ids=[i for i, _ in TO])
def test_to_jelly(case: dict, tmp_path: Path) -> None:
    _options_file, *inputs = case["action"]
    frames = [_expected(p) for p in inputs]
    if _extended(case) and any(isinstance(f, SyntaxError) for f in frames):
        # refused by pyoxigraph, naming the line of the input file, before anything is written
        assert all(re.search(r"line \d+", str(f)) for f in frames if isinstance(f, SyntaxError))
        return
    assert not [f for f in frames if isinstance(f, SyntaxError)]
    buf = io.BytesIO()
    w = JellyWriter(buf)
    for f in frames:
        w.write(f)  # type: ignore[arg-type]
    w.close()
    out = tmp_path / "out.jelly"
    out.write_bytes(buf.getvalue())
    got = _read(out)
    assert not [m for m in got if isinstance(m, Rejected)]
    assert len(got) == len(frames)
    if case["positive"]:
        (ref,) = case["result"]
        want = _read(ref)
        assert len(want) == len(got)
    else:
        # the conditions the case's options would break cannot arise: rsep's options
        opts = _options(buf.getvalue())
        assert opts.max_datatype_table_size > 0 and opts.max_name_table_size >= 8
        want = [Message(i, i, f) for i, f in enumerate(frames, 1)]  # type: ignore[arg-type]
    for i, (m, r) in enumerate(zip(got, want, strict=True)):
        assert isinstance(m, Message) and isinstance(r, Message)
        assert isomorphic(m.quads, r.quads), (i, [str(q) for q in m.quads], [str(q) for q in r.quads])
