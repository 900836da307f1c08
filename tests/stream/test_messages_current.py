"""RDF Message Logs in the current syntax (a "-messages" version label, MESSAGE delimiters)
through the real CLI: written by ``rsep convert`` and read back, the two syntaxes mixed, and
issue 52's hostile input in a log (bytes not UTF-8, oversize messages, a term too large for
pyoxigraph): each a dead-letter record with its place, the log read on, the results due
output first."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rsep.stream.files import StreamFile
from rsep.stream.messages import MessageLog
from rsep.stream.writer import DELIMITER, DRAFT_DELIMITER, HEADER
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
RSP = """PREFIX : <http://e/>
SELECT ?o FROM NAMED WINDOW :w ON <http://s> [RANGE 5 STEP 1]
WHERE { WINDOW :w { ?s ?p ?o } }
"""
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"
PREFIXES = "PREFIX : <http://e/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"


def rsep(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rsep.cli.main", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def row(t: int, o: str) -> str:
    return json.dumps({"time": t, "bindings": {"o": o}})


def lines(err: str) -> list[str]:
    """stderr without the warnings a stale compiled build gives (tests may run pure)."""
    return [x for x in err.splitlines() if "UserWarning" not in x and not x.startswith("  ")]


def message(i: int, t: int, o: str) -> str:
    return f":g{i} prov:generatedAtTime {t} .\n:g{i} {{ :a :p {o} . }}\n"


def events(items) -> list[tuple]:
    return [(e.graph, e.start, e.end, e.kind, sorted(map(str, e.triples)),
             [(g, sorted(map(str, ts))) for g, ts in e.graphs]) for e in items]


@pytest.mark.parametrize("to", ["rdfm-trig", "rdfm-nquads", "rdfm-draft-trig"])
def test_a_log_rsep_convert_writes_reads_back_into_the_same_events(tmp_path, to):
    log = tmp_path / ("weather.nq" if "nquads" in to else "weather.trig")
    p = rsep("convert", str(SRBENCH), "--to", to, "-o", str(log), "-q")
    assert p.returncode == 0, p.stderr
    text = log.read_text()
    if "draft" in to:
        assert not text.startswith(HEADER) and text.count(DRAFT_DELIMITER) == 34
    else:
        assert text.startswith(HEADER)  # VERSION "1.2-messages"
        assert text.count(DELIMITER) == 34 and text.endswith(DELIMITER) and "@message" not in text
    read = list(MessageLog(log, SR))
    assert len(read) == 34
    assert events(read) == events(StreamFile(SRBENCH, SR))
    # and the same results, the log read by rsep run as the stream file is
    q = str(ROOT / "examples" / "srbench-hot.rq")
    ref = rsep("run", q, "--stream", f"{SR}={SRBENCH}")
    got = rsep("run", q, "--stream", f"{SR}={log}")
    assert ref.returncode == got.returncode == 0, got.stderr
    assert got.stdout == ref.stdout and ref.stdout


def test_a_log_mixing_the_two_syntaxes_is_an_error_at_its_place(tmp_path):
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    s = tmp_path / "s.trig"
    s.write_text('VERSION "1.2-messages"\n' + PREFIXES + message(1, 1, "1") + "MESSAGE\n"
                 + message(2, 2, "2") + "# @message\n" + message(3, 3, "3") + "MESSAGE\n")
    p = rsep("run", str(q), "--stream", f"http://s={s}")
    assert p.returncode == 3, p.stderr
    # the comment cuts nothing: message 2 runs to the next MESSAGE, and is rejected whole
    assert p.stdout.splitlines() == [row(1, '"1"' + INT)]
    assert lines(p.stderr)[0] == (
        f"rejected: {s}:9:1: message 2: a '# @message' comment (the December 2025 draft's "
        "delimiter) in a log with a \"-messages\" version label: a log is in one syntax or the other")


def test_invalid_utf8_in_a_log_is_rejected_with_its_byte_offset(tmp_path):
    # before: read as U+FFFD, rc 0, nothing said
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    s = tmp_path / "s.trig"
    head = ('VERSION "1.2-messages"\n' + PREFIXES + message(1, 1, "1") + "MESSAGE\n").encode()
    bad = b':g2 prov:generatedAtTime 2 .\n:g2 { :a :p "ab\xff\xfecd" . }\nMESSAGE\n'
    s.write_bytes(head + bad + (message(3, 3, "3") + "MESSAGE\n").encode())
    p = rsep("run", str(q), "--stream", f"http://s={s}")
    assert p.returncode == 3, p.stderr
    assert "\ufffd" not in p.stdout
    assert p.stdout.splitlines()[:3] == [row(1, '"1"' + INT), row(2, '"1"' + INT),
                                         row(3, '"1"' + INT)]
    at = len(head) + bad.index(b"\xff")
    assert lines(p.stderr)[0] == (
        f"rejected: {s}:8:16: message 2: invalid UTF-8: byte 0xFF at byte offset {at} (a message "
        "holding it is not read, not even in part)")


def test_a_message_over_the_bound_is_a_dead_letter_and_the_log_goes_on(tmp_path):
    # before: "a single message exceeds ..." (rc 1): the due results never output, the rest lost
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    s = tmp_path / "s.trig"
    big = ':g2 prov:generatedAtTime 3 .\n:g2 { :a :p """' + "y\n" * (1 << 20) + '""" . }\n'
    s.write_text('VERSION "1.2-messages"\n' + PREFIXES + message(1, 1, "1") + "MESSAGE\n"
                 + big + "MESSAGE\n" + message(3, 20, "3") + "MESSAGE\n")
    dead = tmp_path / "dead.jsonl"
    p = rsep("run", str(q), "--stream", f"http://s={s}", "--max-record-bytes", "1M",
             "--dead-letter", str(dead))
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines() == [row(t, '"1"' + INT) for t in range(1, 6)] + [
        row(20, '"3"' + INT)]
    (rec,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert (rec["line"], rec["reason"]) == (
        7, "message 2: over 1,048,576 characters (--max-record-bytes); skipped to its delimiter")


def test_a_17_mib_literal_in_a_message_is_a_dead_letter(tmp_path):
    # pyoxigraph's MemoryError (a term over 16 MiB), with a bound that lets the message in
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    s = tmp_path / "s.nq"
    g = "<http://e/g{0}>"
    t = "<http://www.w3.org/ns/prov#generatedAtTime>"

    def msg(i: int, time: int, o: str) -> str:
        return f"{g.format(i)} {t} \"{time}\"{INT} .\n<http://e/a> <http://e/p> {o} {g.format(i)} .\nMESSAGE\n"

    s.write_text('VERSION "1.2-messages"\n' + msg(1, 1, f'"1"{INT}')
                 + msg(2, 10, '"' + "x" * (17 << 20) + '"') + msg(3, 20, f'"3"{INT}'))
    p = rsep("run", str(q), "--stream", f"http://s={s}", "--max-record-bytes", "64M")
    assert p.returncode == 3, p.stderr[-800:]
    assert p.stdout.splitlines() == [row(t, '"1"' + INT) for t in range(1, 6)] + [
        row(20, '"3"' + INT)]
    first = lines(p.stderr)[0]
    assert first.startswith(f"rejected: {s}:5:1: message 2: a term too large for the parser (")


def test_the_service_reads_a_log_announced_by_its_version_parameter():
    from rsep.serve.ingest import body_format, read_body
    from rsep.stream.event import Event
    from rsep.stream.time import TimeConfig

    body = (PREFIXES + message(1, 1, "1") + "MESSAGE\n" + message(2, 2, "2")).encode()
    fmt = body_format("application/trig; version=1.2-messages", None)
    got = read_body(body, "http://s", fmt, "POST", TimeConfig())
    assert [(e.graph, e.start) for e in got if isinstance(e, Event)] == [("http://e/g1", 1), ("http://e/g2", 2)]
    # without the announcement (and no label in the body) MESSAGE is refused, located
    (bad,) = read_body(body, "http://s", body_format("application/trig; messages=rdfm", None),
                          "POST", TimeConfig())
    assert (bad.line, bad.column) == (5, 1) and "not in RDF Messages mode" in bad.reason
