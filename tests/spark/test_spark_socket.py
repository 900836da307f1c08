"""The TCP socket source: framing into whole events, replayable offsets, a real server."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from rsep.spark.parse import parse_text
from rsep.spark.socket import SocketStreamReader, parse_url, socket_records
from rsep.spark.spool import SpoolError
from rsep.stream.event import Event
from rsep.stream.files import StreamFile
from rsep.stream.framing import Framer
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
P = "@prefix : <http://e/> .\n"


def frames(fmt: str, text: str, step: int = 1) -> list[str]:
    """Feed ``text`` in pieces of ``step`` characters, as a socket may deliver it."""
    f = Framer(fmt)
    out = []
    for i in range(0, len(text), step):
        out += f.feed(text[i:i + step])
    return out + f.finish()


def test_trig_frames_keep_time_triples_with_their_graph_and_carry_the_prefixes():
    time_first = P + ':g1 :t 1 .\n:g1 {\n :a :p "x}\\n" .\n}\n:g2 :t 2 .\n:g2 { :b :p :c . }\n'
    assert frames("trig", time_first) == [
        P + ':g1 :t 1 .\n:g1 {\n :a :p "x}\\n" .\n}\n', P + ":g2 :t 2 .\n:g2 { :b :p :c . }\n"]
    time_last = P + ":g1 { :a :p :b . }\n:g1 :t 1 .\n:g2 { :b :p :c . }\n:g2 :t 2 .\n\n:g3 { :x :p :y . }\n"
    assert frames("trig", time_last) == [
        P + ":g1 { :a :p :b . }\n:g1 :t 1 .\n", P + ":g2 { :b :p :c . }\n:g2 :t 2 .\n",
        P + ":g3 { :x :p :y . }\n"]
    # A directive in the middle applies to what follows only.
    later = ":g1 :t 1 .\n:g1 { :a :p :b . }\n" + P + ":g2 :t 2 .\n:g2 { :b :p :c . }\n"
    assert frames("trig", P + later) == [P + ":g1 :t 1 .\n:g1 { :a :p :b . }\n",
                                         P + P + ":g2 :t 2 .\n:g2 { :b :p :c . }\n"]


def test_nquads_frames_group_runs_of_one_graph_and_jsonl_is_one_frame_per_line():
    e = "http://e/"
    nq = (f'<{e}g1> <{e}t> "1" .\n<{e}a> <{e}p> <{e}b> <{e}g1> .\n<{e}a> <{e}p> <{e}c> <{e}g1> .\n'
          f'<{e}g2> <{e}t> "2" .\n<{e}a> <{e}p> <{e}d> <{e}g2> .\n')
    lines = nq.splitlines()
    assert frames("nquads", nq, step=5) == ["\n".join(lines[:3]) + "\n", "\n".join(lines[3:]) + "\n"]
    assert frames("jsonl", '{"a": 1}\n\n{"b": 2}') == ['{"a": 1}\n', '{"b": 2}\n']
    with pytest.raises(ValueError, match="format must be"):
        Framer("turtle")


def test_srbench_frames_parse_to_the_file_events():
    text = SRBENCH.read_text()
    got = [e for f in frames("trig", text, step=4096) for e in parse_text(f, SR, "tcp://x", "trig")]
    want = list(StreamFile(SRBENCH, SR))
    assert len(got) == len(want) == 34
    assert all(isinstance(e, Event) for e in got)
    assert [(e.graph, e.start, e.end, sorted(map(str, e.triples))) for e in got] == \
        [(e.graph, e.start, e.end, sorted(map(str, e.triples))) for e in want]


class Server:
    """A TCP server sending each client the next list of chunks, then closing."""

    def __init__(self, sessions: list[list[str]]) -> None:
        self.sessions = list(sessions)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.sessions:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                for chunk in self.sessions.pop(0):
                    conn.sendall(chunk.encode())
                    time.sleep(0.001)

    def close(self) -> None:
        self.sock.close()


def test_socket_reader_reconnects_and_each_connection_is_framed_afresh(tmp_path):
    a = P + ":g1 :t 1 .\n:g1 { :a :p :b . }\n:g2 :t 2 .\n:g2 {"
    b = P + ":g3 :t 3 .\n:g3 { :c :p :d . }\n"
    srv = Server([[a[:20], a[20:]], [b]])
    r = SocketStreamReader({"host": "127.0.0.1", "port": str(srv.port), "stream": SR,
                            "retryinterval": "0.05", "format": "trig",
                            "spooldir": str(tmp_path / "sp")})
    try:
        start = r.initialOffset()
        deadline = time.monotonic() + 10
        while r.latestOffset(start, ReadAllAvailable())["seq"] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        end = r.latestOffset(start, ReadAllAvailable())
        rows = [row for p in r.partitions(start, end) for row in r.read(p)]
    finally:
        r.stop()
        srv.close()
    url = f"tcp://127.0.0.1:{srv.port}"
    # The unfinished block at the first connection's end is a frame of its own: parsed,
    # it is rejected with its reason (dead letter), not lost.
    assert [(s, o, t, f) for s, o, t, _, f in rows] == [
        (SR, f"{url}#000000000000", P + ":g1 :t 1 .\n:g1 { :a :p :b . }\n", "trig"),
        (SR, f"{url}#000000000001", P + ":g2 :t 2 .\n:g2 {\n", "trig"),
        (SR, f"{url}#000000000002", P + ":g3 :t 3 .\n:g3 { :c :p :d . }\n", "trig")]
    assert srv.connections == 2


def test_socket_reader_errors_are_clear():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SpoolError, match=rf"cannot connect to tcp://127\.0\.0\.1:{port}"):
        SocketStreamReader({"host": "127.0.0.1", "port": str(port)}).initialOffset()
    with pytest.raises(ValueError, match="needs option port"):
        SocketStreamReader({"host": "h"})
    with pytest.raises(ValueError, match="format must be"):
        SocketStreamReader({"port": "1", "format": "csv"})
    assert parse_url("tcp://h:9000") == ("h", 9000)
    with pytest.raises(ValueError, match="host and a port"):
        parse_url("tcp://h")


def test_socket_source_in_spark_delivers_the_stream_as_whole_events_across_a_restart(
        spark, tmp_path):
    text = SRBENCH.read_text()
    cut = text.index("<http://example.org/srbench/event/20> prov:generatedAtTime")
    # The server streams the file in 1000-character pieces (cutting through records), the
    # second connection the rest of it with the prefixes again.
    head = [text[i:min(i + 1000, cut)] for i in range(0, cut, 1000)]
    prefixes = text[:text.index("<http://example.org/srbench/event/00>")]
    srv = Server([head, [prefixes + text[cut:]]])
    ck, spool = str(tmp_path / "ck"), tmp_path / "spool"
    rows: list = []

    def start(reconnect: str):
        df = socket_records(spark, "127.0.0.1", srv.port, stream=SR, spool_dir=spool,
                            reconnect=reconnect)
        return (df.writeStream.foreachBatch(lambda d, i: rows.extend(map(tuple, d.collect())))
                .option("checkpointLocation", ck).start())

    try:
        q = start("false")
        deadline = time.monotonic() + 30
        while len(rows) < 20 and time.monotonic() < deadline:
            q.processAllAvailable()
            time.sleep(0.05)
        q.stop()
        assert len(rows) == 20
        q = start("false")  # a new connection from the checkpointed position
        while len(rows) < 34 and time.monotonic() < deadline:
            q.processAllAvailable()
            time.sleep(0.05)
        q.processAllAvailable()
        q.stop()
    finally:
        srv.close()
    assert [r[1] for r in rows] == [f"tcp://127.0.0.1:{srv.port}#{i:012d}" for i in range(34)]
    got = [e for r in rows for e in parse_text(r[2], r[0], r[1], r[4])]
    want = list(StreamFile(SRBENCH, SR))
    assert [(e.graph, e.start, sorted(map(str, e.triples))) for e in got] == \
        [(e.graph, e.start, sorted(map(str, e.triples))) for e in want]


def test_live_records_dispatches_on_the_url(spark, tmp_path):
    from rsep.spark.live import is_live_url, live_records

    df = live_records(spark, SR, "tcp://127.0.0.1:9?format=nquads", spool_dir=tmp_path)
    assert df.isStreaming and df.columns == ["stream", "origin", "text", "arrival", "format"]
    assert is_live_url("mqtt://h/t") and is_live_url("tcp://h:1") and not is_live_url("/tmp/x")
    with pytest.raises(ValueError, match="not a live source URL"):
        live_records(spark, SR, "http://h/x")
