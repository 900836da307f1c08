"""Kafka in and out, against a real single-node KRaft broker (tests/kafka_broker.py): events
produced into a topic -> ``rsep run`` -> results on a topic, in process and on Spark (Spark's
own Kafka source and sink), the same rows; a malformed record in the dead letter at its
partition and offset; a broker killed mid-stream is a located error, never a clean end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from kafka_broker import Broker, consume, produce

from rsep.cli.main import main

S = "http://ex.org/s"
QUERY = """PREFIX : <http://ex.org/>
REGISTER RSTREAM <http://ex.org/out> AS
SELECT ?s (MAX(?v) AS ?max) (COUNT(?v) AS ?n)
FROM NAMED WINDOW <http://ex.org/w> ON <http://ex.org/s> [RANGE 10 STEP 10]
WHERE { WINDOW <http://ex.org/w> { ?s :temp ?v } }
GROUP BY ?s
ORDER BY ?s
"""
BAD = "<http://ex.org/bad> { this is not trig"
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def record(i: int) -> str:
    """Event i, at time 2i: sensor s(i mod 2) reads 20 + i."""
    return ("@prefix prov: <http://www.w3.org/ns/prov#> .\n"
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
            f'<http://ex.org/e/{i}> prov:generatedAtTime "{2 * i}"^^xsd:integer .\n'
            f"<http://ex.org/e/{i}> {{ <http://ex.org/s{i % 2}> <http://ex.org/temp> {20 + i} . }}\n")


def row(t: int, s: int, mx: int, n: int) -> dict:
    return {"time": t, "bindings": {"s": f"<http://ex.org/s{s}>", "max": f'"{mx}"{INT}',
                                    "n": f'"{n}"{INT}'}}


# events 0..11 (times 0..22) through windows (-10, 0], (0, 10], (10, 20]
EXPECTED = [row(0, 0, 20, 1), row(10, 0, 24, 2), row(10, 1, 25, 3), row(20, 0, 30, 3),
            row(20, 1, 29, 2)]
# the malformed record is the 7th of the topic: offset 6
RECORDS = [record(i) for i in range(6)] + [BAD] + [record(i) for i in range(6, 12)]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """One broker for the module's tests (~4 s to start): its bootstrap servers."""
    b = Broker(tmp_path_factory.mktemp("kafka"))
    yield b
    b.stop()


@pytest.fixture
def query(tmp_path):
    q = tmp_path / "max.rq"
    q.write_text(QUERY)
    return str(q)


def topic(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_round_trip_in_process(kafka, query, tmp_path):
    src, out = topic("events"), topic("results")
    produce(kafka.servers, src, RECORDS)
    dead = tmp_path / "dead.jsonl"
    rc = main(["run", query, "-q", "--stream", f"{S}=kafka://{kafka.servers}/{src}?idle=1",
               "-o", f"kafka://{kafka.servers}/{out}", "--dead-letter", str(dead)])
    assert rc == 3  # a record rejected
    assert [json.loads(v) for v in consume(kafka.servers, out, n=len(EXPECTED) + 1, idle=2)] \
        == EXPECTED
    [d] = [json.loads(x) for x in dead.read_text().splitlines()]
    assert d["file"] == f"kafka://{kafka.servers}/{src}#0-000000000006"
    assert "not a valid RDF subject" in d["reason"] and d["stream"] == S


def test_round_trip_on_spark_equals_in_process(kafka, query, tmp_path):
    """``rsep run --engine spark``: Spark's Kafka source and sink (its own JVM, with the
    connector from spark.jars.packages), the in-process rows; the rejected record on the
    dead-letter topic; a rerun from the same checkpoint writes nothing twice."""
    src, out = topic("events"), topic("results")
    produce(kafka.servers, src, RECORDS)
    cmd = [sys.executable, "-m", "rsep.cli.main", "run", query, "--engine", "spark",
           "--master", "local[1]", "--stream", f"{S}=kafka://{kafka.servers}/{src}?idle=1",
           "-o", f"kafka://{kafka.servers}/{out}", "--checkpoint", str(tmp_path / "ck")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert p.returncode == 3, p.stderr[-3000:]
    assert f"kafka://{kafka.servers}/{src}#0-000000000006:1:23: this is not a valid RDF subject" \
        in p.stderr
    got = consume(kafka.servers, out, n=len(EXPECTED) + 1, idle=2, headers=True)
    assert [json.loads(v) for v, _ in got] == EXPECTED
    assert [(h["rsep-batch"], h["rsep-seq"]) for _, h in got] == \
        [(got[0][1]["rsep-batch"], str(i)) for i in range(len(EXPECTED))]
    [(d, _)] = consume(kafka.servers, out + "-dead-letter", idle=1, headers=True)
    assert json.loads(d)["file"] == f"kafka://{kafka.servers}/{src}#0-000000000006"


def test_broker_killed_mid_stream_is_a_located_error(tmp_path, query):
    """The broker dies while ``rsep run`` reads a topic with ?idle: the run fails (exit 1)
    naming the topic and the last offset it read, after the results of what it read."""
    b = Broker(tmp_path / "broker")
    try:
        src = topic("events")
        produce(b.servers, src, [record(i) for i in range(6)])
        proc = subprocess.Popen(
            [sys.executable, "-m", "rsep.cli.main", "run", query, "-q", "--stream",
             f"{S}=kafka://{b.servers}/{src}?idle=30&timeout=2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1"})
        first = proc.stdout.readline()  # the window closed at 10 by event 5 (time 10)...
        assert json.loads(first) == row(0, 0, 20, 1)
        time.sleep(0.5)
        b.kill()
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 20  # timeout=2, not idle=30: no wait for the idle end
        assert proc.returncode == 1, err
        assert f"kafka://{b.servers}/{src}: after 6 record(s), the last at partition 0 " \
               "offset 5; the broker has been unreachable for 2 s" in err
        assert "Traceback" not in err
    finally:
        b.kill()


def test_urls_and_formats_refused_before_any_connection(query):
    """Nothing listens on port 9: every one of these fails on its words, not a timeout."""
    for stream, why in [("kafka://127.0.0.1:9", "without a topic"),
                        ("kafka://127.0.0.1:x/t", "bad port"),
                        ("kafka://127.0.0.1:9/a/b", "topic names are"),
                        ("kafka://127.0.0.1:9/t?window=3", "unknown option(s) window"),
                        ("kafka://127.0.0.1:9/t?idle=-1", "idle must be")]:
        with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
            from rsep.stream.kafka import KafkaStream

            KafkaStream(stream, S)
    from rsep.runtime.kafka_output import KafkaOutput

    with pytest.raises(ValueError, match="one item per record"):
        KafkaOutput("kafka://127.0.0.1:9/t", "table")


def test_unreachable_broker_at_the_start(query, capsys):
    t0 = time.monotonic()
    rc = main(["run", query, "--stream", f"{S}=kafka://127.0.0.1:9/t?idle=1&timeout=1"])
    assert rc == 1
    assert "kafka://127.0.0.1:9/t: cannot reach the broker in 1 s" in capsys.readouterr().err
    assert time.monotonic() - t0 < 10


def test_spark_restarted_from_its_checkpoint_writes_each_result_once(kafka, query, tmp_path):
    """A job stopped (Ctrl-C) after its first results, and started again from its checkpoint
    after more events came: the topic holds every result once, as one uninterrupted run's."""
    src, out = topic("events"), topic("results")
    produce(kafka.servers, src, [record(i) for i in range(6)])
    ck = str(tmp_path / "ck")

    def cmd(options: str) -> list[str]:
        return [sys.executable, "-m", "rsep.cli.main", "run", query, "-q", "--engine", "spark",
                "--master", "local[1]", "--stream", f"{S}=kafka://{kafka.servers}/{src}{options}",
                "-o", f"kafka://{kafka.servers}/{out}", "--checkpoint", ck]

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    first = subprocess.Popen(cmd(""), stderr=subprocess.PIPE, text=True, env=env)
    try:
        before = consume(kafka.servers, out, n=1, idle=120)
        assert before, first.stderr.read() if first.poll() is not None else "no result in 120 s"
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    produce(kafka.servers, src, [record(i) for i in range(6, 12)])
    p = subprocess.run(cmd("?idle=1"), capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    got = [json.loads(v) for v in consume(kafka.servers, out, n=len(EXPECTED) + 1, idle=2)]
    assert got == EXPECTED


def message(i: int) -> str:
    """Event i as one RDF Message (its default graph timed by its subject)."""
    return ("@prefix prov: <http://www.w3.org/ns/prov#> .\n"
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
            f'<http://ex.org/m/{i}> prov:generatedAtTime "{2 * i}"^^xsd:integer .\n'
            f"<http://ex.org/s{i % 2}> <http://ex.org/temp> {20 + i} .\n")


def jsonl(i: int) -> str:
    return json.dumps({"graph": f"http://ex.org/e/{i}", "time": 2 * i,
                       "triples": f"<http://ex.org/s{i % 2}> <http://ex.org/temp> {20 + i} ."})


@pytest.mark.parametrize("shape", ["rdfm", "jsonl"])
def test_one_rdf_message_or_json_line_per_record(kafka, query, tmp_path, capsys, shape):
    src = topic(shape)
    produce(kafka.servers, src, [message(i) if shape == "rdfm" else jsonl(i) for i in range(12)])
    url = f"kafka://{kafka.servers}/{src}?idle=1" + ("&format=jsonl" if shape == "jsonl" else "")
    args = ["--stream-format", "rdfm"] if shape == "rdfm" else []
    assert main(["run", query, "-q", "--stream", f"{S}={url}", *args]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == EXPECTED


def test_a_consumer_group_goes_on_where_it_stopped(kafka, query, capsys):
    """?group=NAME commits offsets: a second run of the group reads only the newer records
    (and without a group every run reads the topic from its start)."""
    src = topic("events")
    produce(kafka.servers, src, [record(i) for i in range(6)])
    url = f"kafka://{kafka.servers}/{src}?idle=1&group=g-{src}"
    assert main(["run", query, "-q", "--stream", f"{S}={url}"]) == 0
    first = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert first == EXPECTED[:3]  # the end of input (idle) closed the window at 10
    produce(kafka.servers, src, [record(i) for i in range(6, 12)])
    assert main(["run", query, "-q", "--stream", f"{S}={url}"]) == 0
    # events 6..11 alone (times 12..22): nothing of 0..5 again
    second = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert second == [row(20, 0, 30, 3), row(20, 1, 29, 2)]


CONSTRUCT = """PREFIX : <http://ex.org/>
REGISTER RSTREAM <http://ex.org/out> AS
CONSTRUCT { ?s :hot ?v }
FROM NAMED WINDOW <http://ex.org/w> ON <http://ex.org/s> [RANGE 10 STEP 10]
WHERE { WINDOW <http://ex.org/w> { ?s :temp ?v } }
"""


@pytest.mark.parametrize("fmt", ["rdfm-trig", "rdfm-nquads"])
def test_rdf_messages_to_kafka_one_per_record_as_spark_reads_them(kafka, tmp_path, fmt):
    """``-o kafka://... --format rdfm-*``: each record one evaluation's message, the log's
    messages without its version label (the first record too) or MESSAGE, announced by the
    RDF-Message-Content-Type header; Spark's parse stage reads a record, in the topic's
    syntax, as --stream-format rdfm with ?format= has it (N-Quads not read as TriG)."""
    from rsep.spark.kafka import check_url, record_format
    from rsep.spark.texts import read_text
    from rsep.stream.event import Event
    from rsep.stream.writer import split_log

    q = tmp_path / "hot.rq"
    q.write_text(CONSTRUCT)
    src, out = topic("events"), topic("messages")
    produce(kafka.servers, src, [record(i) for i in range(12)])
    stream = f"{S}=kafka://{kafka.servers}/{src}?idle=1"
    log = tmp_path / "log.out"
    assert main(["run", str(q), "-q", "--stream", stream, "--format", fmt, "-o", str(log)]) == 0
    assert main(["run", str(q), "-q", "--stream", stream, "--format", fmt,
                 "-o", f"kafka://{kafka.servers}/{out}"]) == 0
    got = consume(kafka.servers, out, idle=2, headers=True)
    messages = split_log(log.read_text())
    assert len(messages) == 3 and [v for v, _ in got] == messages
    media = "application/trig" if fmt == "rdfm-trig" else "application/n-quads"
    assert all(h == {"RDF-Message-Content-Type": media} for _, h in got)
    syntax = "trig" if fmt == "rdfm-trig" else "nquads"
    url = f"kafka://{kafka.servers}/{out}?format={syntax}"
    assert record_format(check_url(url, stream_format="rdfm"), "rdfm") == "rdfm-" + syntax
    for i, (v, _) in enumerate(got):
        [e] = read_text(v, "urn:out", f"kafka://{kafka.servers}/{out}#0-{i:012d}", "rdfm-" + syntax)
        assert isinstance(e, Event) and e.triples, e
    if syntax == "nquads":  # read as TriG instead, an N-Quads line with a graph is refused
        assert not all(isinstance(e, Event) for e in read_text(got[0][0], "urn:out", "x", "rdfm-trig"))


def test_bytes_not_utf8_in_a_record_are_a_dead_letter_at_their_offset(kafka, query, tmp_path):
    # before: decoded with U+FFFD in their place, read as a literal, rc 0, nothing said
    src = topic("utf8")
    bad = record(1).encode().replace(b"21 .", b'"\xc3\xa9t\xff" .')
    produce(kafka.servers, src, [record(0), bad, record(2)])
    dead = tmp_path / "dead.jsonl"
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", query, "-q", "--stream",
                        f"{S}=kafka://{kafka.servers}/{src}?idle=1", "--dead-letter", str(dead)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr[-800:]
    assert "\ufffd" not in p.stdout
    # the graph, and its timestamp then naming no graph (as a file's reader says it)
    rec, stamp = [json.loads(x) for x in dead.read_text().splitlines()]
    at = bad.index(b"\xff")
    assert rec["file"] == stamp["file"] == f"kafka://{kafka.servers}/{src}#0-000000000001"
    assert (rec["line"], rec["column"]) == (4, 66)
    assert rec["reason"] == (f"invalid UTF-8: byte 0xFF at byte {at} of the record (a record "
                             "holding it is not read, not even in part)")
    assert stamp["reason"] == ("timestamp given for <http://ex.org/e/1>, but the file has no "
                               "graph of that name")
    assert [json.loads(x)["time"] for x in p.stdout.splitlines()] == [0]
