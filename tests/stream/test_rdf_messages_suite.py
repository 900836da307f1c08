"""The RDF Messages interoperability tests (W3C RSP CG, spec/messages-tests.bs), one test per
case of ../shared/data/rdf-messages/cases/manifest.json, generated from the manifest.

A positive case passes when rsep's reader gives the expected messages (compared message by
message, each as a set of quads up to blank node renaming); a negative case when the reader
rejects it with the position of what is wrong. The cases rsep does not read (NDJSON-LD, JSON-LD
payloads: rsep has no JSON-LD processor) check that rsep refuses them with a reason instead
of misreading them; docs/semantics.md "RDF Message Logs" lists them."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from serve_server import SPARQL, serve

from rsep.serve.ingest import body_format
from rsep.stream.event import Rejected
from rsep.stream.framing import CURRENT
from rsep.stream.jelly import JellyWriter
from rsep.stream.messages import Message, MessageLog
from rsep.stream.writer import MessageWriter
from rsep.testing.snippets import ROOT, SRBENCH_HOT_CONSTRUCT

SUITE = ROOT.parent / "shared" / "data" / "rdf-messages"
CASES = json.loads((SUITE / "cases" / "manifest.json").read_text())["cases"]
# the syntaxes of the manifest, read by rsep's two text readers (N-Triples is N-Quads,
# Turtle is TriG) and written by its two text writers
READER = {"n-triples": "nquads", "n-quads": "nquads", "turtle": "trig", "trig": "trig"}
WRITERS = {"n-quads": ("rdfm-nquads", "rdfm-draft-nquads"), "trig": ("rdfm-trig", "rdfm-draft-trig")}
# the discovery cases whose payloads rsep reads: a transport that delimits the messages
# (one record, frame or broker message each), the payload syntax in the metadata
PAYLOADS = ("kafka-records", "websocket-subprotocol-negotiation", "other-broker-messages")


def _case(case: dict) -> Path:
    return SUITE / case["input"]


def _expected(case: dict):
    return json.loads((SUITE / case["expected"]).read_text())


def _quads(lines: list[str]) -> list[ox.Quad]:
    return list(ox.parse("\n".join(lines), format=ox.RdfFormat.N_QUADS))


def isomorphic(got: list[ox.Quad], want: list[ox.Quad]) -> bool:
    """Equal as sets of quads up to blank node renaming (every renaming tried: the cases
    hold a few blank nodes at most)."""
    def blanks(qs: list[ox.Quad]) -> list[str]:
        return sorted({t.value for q in qs for t in (q.subject, q.object, q.graph_name)
                       if isinstance(t, ox.BlankNode)})

    def rename(qs: list[ox.Quad], names: dict[str, str]) -> set[str]:
        def f(t):
            return ox.BlankNode(names[t.value]) if isinstance(t, ox.BlankNode) else t
        return {str(ox.Quad(f(q.subject), q.predicate, f(q.object), f(q.graph_name))) for q in qs}

    bg, bw = blanks(got), blanks(want)
    if len(bg) != len(bw) or len(got) != len(want):
        return False
    target = rename(want, {b: f"x{i}" for i, b in enumerate(bw)})
    return any(rename(got, dict(zip(bg, (f"x{i}" for i in perm), strict=True))) == target
               for perm in itertools.permutations(range(len(bg))))


def same_messages(got: list[Message | Rejected], want: list[list[str]]) -> None:
    assert all(isinstance(m, Message) for m in got), [m for m in got if isinstance(m, Rejected)]
    assert len(got) == len(want), (len(got), len(want))
    for i, (m, w) in enumerate(zip(got, want, strict=True), 1):
        assert isinstance(m, Message)
        assert isomorphic(m.quads, _quads(w)), (i, [str(q) for q in m.quads], w)


def read(path: Path, fmt: str) -> list[Message | Rejected]:
    return list(MessageLog(path, "urn:s", fmt=fmt).messages())


def _bnode_subjects(got: list[Message | Rejected]) -> list[ox.BlankNode]:
    return [q.subject for m in got if isinstance(m, Message) for q in m.quads
            if isinstance(q.subject, ox.BlankNode)]


def _payloads(path: Path) -> list[str]:
    """The payloads of a discovery case's listing: the indented lines after each label."""
    out: list[list[str]] = []
    for line in path.read_text().splitlines():
        if line.startswith("  "):
            out[-1].append(line[2:])
        elif line.strip():
            out.append([])
    return ["\n".join(p) + "\n" for p in out]


def _content_type(path: Path) -> str:
    """The payloads' media type a discovery case's metadata gives: a header or property, or
    the WebSocket subprotocol the server chose (rdfm.n-triples: application/n-triples)."""
    found = None
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        if key.lower() in ("rdf-message-content-type", "content type"):
            return value.strip()
        if key.lower() == "sec-websocket-protocol":
            found = value.strip()  # the last: the handshake's response
    if found and found.startswith("rdfm."):
        return "application/" + found[5:]
    raise AssertionError(f"no content type in {path}")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case: dict, tmp_path: Path) -> None:
    kind, cid = case["kind"], case["id"]
    if kind == "parse":
        path = _case(case)
        want = _expected(case)
        # every syntax the input is written in, through the reader of that syntax
        fmts = sorted({READER[s] for s in case["syntaxes"]})
        assert fmts
        for fmt in fmts:
            got = read(path, fmt)
            same_messages(got, want)
            if cid == "blank-node-labels-are-scoped-per-message":
                # one parse of the whole log, the same label: two distinct nodes
                one, two = _bnode_subjects(got)
                assert one != two
        return
    if kind == "error":
        path = _case(case)
        text = path.read_text()
        # where the error is: the delimiter the case is about
        at = next(i for i, line in enumerate(text.splitlines(), 1)
                  if line.strip().startswith(("MESSAGE", "@message")))
        for fmt in sorted({READER[s] for s in case["syntaxes"]}):
            got = read(path, fmt)
            assert got, "rejected silently"
            assert not [m for m in got if isinstance(m, Message) and m.quads], got
            bad = [m for m in got if isinstance(m, Rejected)]
            assert [(r.line, r.column) for r in bad] == [(at, 1)], [(r.line, r.column, r.reason) for r in bad]
            assert bad[0].reason.startswith("message 1: ")
        return
    if kind == "round-trip":
        messages = [_quads(m) for m in json.loads((SUITE / case["input"]).read_text())]
        want = _expected(case)
        writers = [w for s in case["syntaxes"] if s in WRITERS for w in WRITERS[s]]
        assert writers
        for fmt in writers:
            out = io.StringIO()
            w = MessageWriter(out, fmt)
            for m in messages:
                w.write_quads(m)
            w.close()
            log = tmp_path / ("log.nq" if "nquads" in fmt else "log.trig")
            log.write_text(out.getvalue())
            same_messages(read(log, "nquads" if "nquads" in fmt else "trig"), want)
        return
    if kind == "ndjson-ld" or cid in ("mqtt-5-publish-packets", "sse-json-ld-context-link"):
        # Not applicable: JSON-LD messages. rsep reads no JSON-LD (no JSON-LD processor among
        # its dependencies; most of these cases also need the remote schema.org context). The
        # media type is refused with the formats rsep reads, never misread as rsep's JSON lines.
        media = "application/ld+json"
        if cid in ("mqtt-5-publish-packets", "sse-json-ld-context-link"):
            media = _content_type(SUITE / case["metadata"])
        assert media == "application/ld+json"
        with pytest.raises(ValueError, match="unknown event format 'application/ld\\+json'"):
            body_format(f"{media}; version=1.2-messages", None)
        return
    if cid in PAYLOADS:
        media = _content_type(SUITE / case["metadata"])
        fmt = body_format(f"{media}; version=1.2-messages", None)
        assert fmt.startswith("rdfm-") and fmt.endswith(";announced")
        payloads = _payloads(_case(case))
        assert len(payloads) == 2
        # one payload, one message: the transport delimits them (as the MQTT source does)
        log = MessageLog("mqtt://h/t", "urn:s", fmt=fmt[5:].split(";")[0], syntax=CURRENT,
                         source=(p + "\nMESSAGE\n" for p in payloads))
        got = list(log.messages())
        same_messages(got, _expected(case))
        if cid == "websocket-subprotocol-negotiation":
            one, two = _bnode_subjects(got)
            assert one != two
        return
    if cid == "jelly-grpc-frames":
        # the case gives its frames in prose: one RdfStreamFrame per dataset, built here
        want = _expected(case)
        buf = io.BytesIO()
        jw = JellyWriter(buf)
        for m in want:
            jw.write(_quads(m))
        path = tmp_path / "frames.jelly"
        path.write_bytes(buf.getvalue())
        same_messages(list(MessageLog(path, "urn:s", fmt="jelly").messages()), want)
        return
    if cid == "sse-rejects-direct-binary-rdf-payloads":
        assert _expected(case)["error"] is True
        media = _content_type(SUITE / case["input"])
        assert media == "application/x-jelly-rdf"
        # rsep's SSE side, the real server: a binary RDF Message format is never put in an
        # SSE data field, asked for by media type or by name
        with serve() as client:
            assert client.post("/queries", headers=SPARQL, params={"name": "hot"},
                               content=SRBENCH_HOT_CONSTRUCT).status_code == 201
            for ask in ({"headers": {"Accept": media}}, {"params": {"format": "jelly"}}):
                r = client.get("/queries/hot/results", **ask)
                assert r.status_code == 406
                assert r.json()["error"].startswith("Jelly is binary and Server-Sent Events carry text")
        return
    raise AssertionError(f"case {cid} of kind {kind}: no check for it")
