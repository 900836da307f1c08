"""The MQTT source and sink against a real mosquitto broker started by the test."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from mqtt_broker import free_port, publish
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from rsep.spark.mqtt import MqttSink, MqttStreamReader, message_ids, mqtt_records, parse_url
from rsep.spark.spool import Spool, SpoolError

S = "http://example.org/S"


def open_session(port: int, client_id: str, topics: list[str]) -> None:
    """Create a persistent session the way the source's reader will resume it: the broker
    queues what is published from now on, before the query has even started."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    done = threading.Event()
    c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv5)
    c.on_subscribe = lambda *a: done.set()
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    c.connect("127.0.0.1", port, clean_start=False, properties=props)
    c.loop_start()
    c.subscribe([(t, 1) for t in topics])
    assert done.wait(10)
    c.disconnect()
    c.loop_stop()


class Subscriber:
    """Collects (payload, user properties) from a topic."""

    def __init__(self, port: int, topic: str) -> None:
        self.got: list[tuple[str, dict]] = []
        ready = threading.Event()
        self.c = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.c.on_connect = lambda c, *a: c.subscribe(topic, qos=1)
        self.c.on_subscribe = lambda *a: ready.set()
        self.c.on_message = lambda c, u, m: self.got.append(
            (m.payload.decode(), dict(getattr(m.properties, "UserProperty", []))))
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        assert ready.wait(10)

    def wait(self, n: int, timeout: float = 20) -> list[tuple[str, dict]]:
        deadline = time.monotonic() + timeout
        while len(self.got) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # and nothing more than expected
        return list(self.got)

    def close(self) -> None:
        self.c.disconnect()
        self.c.loop_stop()


class Collect:
    """foreachBatch target keeping every delivered row, failing on demand."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.rows: list[tuple] = []
        self.fail_on = fail_on

    def __call__(self, df, batch_id: int) -> None:
        rows = [tuple(r) for r in df.collect()]
        if self.fail_on is not None and any(self.fail_on in r[2] for r in rows):
            raise RuntimeError("sink failure injected by the test")
        self.rows.extend(rows)


def drain(query, sink: Collect, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(sink.rows) < n and time.monotonic() < deadline:
        query.processAllAvailable()
        if len(sink.rows) < n:
            time.sleep(0.05)
    query.processAllAvailable()


def trig(i: int) -> str:
    return (f'<{S}/g{i}> <http://www.w3.org/ns/prov#generatedAtTime> "{i}"^^'
            f'<http://www.w3.org/2001/XMLSchema#integer> .\n'
            f'<{S}/g{i}> {{ <http://example.org/a{i}> <http://example.org/p> "x\\ny" . }}\n')


def test_parse_url():
    assert parse_url("mqtt://h:1884/sensors/#") == ("h", 1884, "sensors/#")
    assert parse_url("mqtt://h/a%20b") == ("h", 1883, "a b")
    with pytest.raises(ValueError, match="without a topic"):
        parse_url("mqtt://h:1")
    with pytest.raises(ValueError, match="not an MQTT URL"):
        parse_url("tcp://h:1/x")


def test_spool_replay_release_and_torn_tail(tmp_path):
    sp = Spool(tmp_path / "s", segment_bytes=64)
    for i in range(10):
        assert sp.append("k", f"p{i}".encode(), i) == i
    assert sp.sync() == 10
    assert [(s, a, p.decode()) for s, a, _, p in sp.read(3, 6)] == [(3, 3, "p3"), (4, 4, "p4"),
                                                                    (5, 5, "p5")]
    sp.release(6)
    assert sp.first > 0 and sp.first <= 6
    with pytest.raises(SpoolError, match="committed and deleted"):
        list(sp.read(0, 2))
    sid = sp.id
    sp.close()
    last = sorted((tmp_path / "s").glob("*.log"))[-1]
    with open(last, "ab") as f:
        f.write(b"\x01\x02\x03")  # a crash in the middle of an append
    sp = Spool(tmp_path / "s", segment_bytes=64)
    assert (sp.id, sp.end) == (sid, 10)
    assert sp.append("k", b"p10", 10) == 10
    sp.sync()
    assert [p for *_, p in sp.read(9, 11)] == [b"p9", b"p10"]
    with pytest.raises(SpoolError, match="in use"):
        Spool(tmp_path / "s", lock_timeout=0.1)
    sp.close()


def test_message_ids_do_not_depend_on_row_order():
    a = message_ids(7, [b"x", b"y", b"x"])
    b = message_ids(7, [b"x", b"x", b"y"])
    assert sorted(a) == sorted(b) and len(set(a)) == 3
    assert all(i.startswith("7:") for i in a)


def test_mqtt_source_delivers_exactly_the_published_records_across_restarts(spark, broker, tmp_path):
    topic = "rsep/test/in"
    url = f"mqtt://127.0.0.1:{broker}/{topic}"
    ckpt, spool = str(tmp_path / "ckpt"), tmp_path / "spool"
    sent = [trig(i) for i in range(20)]

    def start(sink):
        df = mqtt_records(spark, url, stream=S, spool_dir=spool, maxRecordsPerBatch="7")
        return df.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()

    first = Collect(fail_on=f"<{S}/g9>")
    q = start(first)
    q.processAllAvailable()  # subscribed: the reader waits for the SUBACK
    t0 = time.time()
    publish(broker, topic, sent[:14])
    deadline = time.monotonic() + 30
    while q.isActive and time.monotonic() < deadline:
        try:
            q.processAllAvailable()
        except Exception:
            break
        time.sleep(0.05)
    assert not q.isActive  # the injected failure stopped the query in the batch holding g9
    q.stop()
    delivered = len(first.rows)
    assert [r[2] for r in first.rows] == sent[:delivered] and delivered <= 9
    # While the query is down the broker queues for its persistent session.
    publish(broker, topic, sent[14:])
    second = Collect()
    q = start(second)
    drain(q, second, len(sent) - delivered)
    q.stop()
    rows = first.rows + second.rows
    assert [r[2] for r in rows] == sent
    assert [(r[0], r[1], r[4]) for r in rows] == [
        (S, f"mqtt://127.0.0.1:{broker}/{topic}#{i:012d}", None) for i in range(len(sent))]
    assert all(t0 - 1 <= r[3].timestamp() <= time.time() + 1 for r in rows)


def read_rows(reader, start: dict, end: dict) -> list[tuple]:
    return [r for p in reader.partitions(start, end) for r in reader.read(p)]


def test_mqtt_reader_topic_to_stream_map_and_origins(broker):
    """The reader's protocol as Spark's driver and executors call it, without a query."""
    streams = json.dumps({"rsep/m/a": S + "A", "rsep/m/+": S + "other"})
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(broker), "topic": "rsep/m/#",
                          "streams": streams, "format": "jsonl"})
    try:
        start = r.initialOffset()  # connects and subscribes
        publish(broker, "rsep/m/a", ["one"])
        publish(broker, "rsep/m/b", ["two"])
        publish(broker, "rsep/m/c/d", ["three"])
        deadline = time.monotonic() + 10
        while r.latestOffset(start, ReadAllAvailable())["seq"] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        end = r.latestOffset(start, ReadAllAvailable())
        assert r.latestOffset(start, ReadMaxRows(2))["seq"] == 2
        rows = read_rows(r, start, end)
        r.commit(end)
    finally:
        r.stop()
    base = f"mqtt://127.0.0.1:{broker}/"
    assert sorted((s_, o, t, f) for s_, o, t, _, f in rows) == [
        (S + "A", base + "rsep/m/a#000000000000", "one", "jsonl"),
        (S + "other", base + "rsep/m/b#000000000001", "two", "jsonl"),
        (base + "rsep/m/c/d", base + "rsep/m/c/d#000000000002", "three", "jsonl")]


def test_mqtt_reader_errors_are_clear(broker, tmp_path):
    with pytest.raises(SpoolError, match=r"cannot connect to MQTT broker 127\.0\.0\.1:\d+"):
        MqttStreamReader({"port": str(free_port()), "host": "127.0.0.1",
                          "topic": "x"}).initialOffset()
    with pytest.raises(ValueError, match="needs option topic"):
        MqttStreamReader({"port": "1"})
    with pytest.raises(ValueError, match="qos must be"):
        MqttStreamReader({"topic": "x", "qos": "3"})
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(broker), "topic": "x",
                          "spoolDir": str(tmp_path / "sp")})
    try:
        # options are case-insensitive outside Spark too: "spoolDir" is not dropped
        assert r.options["spooldir"] == str(tmp_path / "sp")
        with pytest.raises(SpoolError, match="needs the same spoolDir"):
            r.latestOffset({"spool": "another", "seq": 0}, ReadAllAvailable())
    finally:
        r.stop()


def test_mqtt_sink_publishes_jsonl_objects_once_per_batch(spark, broker, tmp_path):
    sub = Subscriber(broker, "rsep/out")
    sink = MqttSink(f"mqtt://127.0.0.1:{broker}/rsep/out", state_dir=tmp_path)
    rows = [{"time": "5", "bindings": {"x": "<http://example.org/a>"}},
            {"time": "5", "bindings": {"x": "<http://example.org/a>"}},
            {"time": "7", "boolean": True}]
    df = spark.createDataFrame(
        [(r["time"], r.get("bindings"), r.get("boolean")) for r in rows],
        "time string, bindings map<string,string>, boolean boolean")
    sink(df, 0)
    sink(df, 0)  # a replay of a batch already acknowledged is not re-sent
    got = sub.wait(3)
    sink.close()
    sub.close()
    assert [json.loads(p) for p, _ in got] == rows
    assert [(u["rsep-batch"], u["rsep-seq"]) for _, u in got] == [("0", "0"), ("0", "1"), ("0", "2")]
    assert [u["rsep-id"] for _, u in got] == message_ids(0, [p.encode() for p, _ in got])
    assert json.loads((Path(tmp_path) / "mqtt-sink.json").read_text()) == {"batch": 0}


@pytest.mark.parametrize("payloads", ["frames", "rdf-messages"])
def test_query_over_mqtt_publishes_the_in_process_results(spark, broker, tmp_path, payloads):
    """End to end: SRBench events published over MQTT, the Spark pipeline, results published
    to an MQTT topic; equal to the in-process engine's results on the same events. The
    events as stream-file frames, or as the RDF Message Log ``rsep convert --to rdfm-trig``
    writes in the current syntax, one message per broker message (each announced by the
    version label, MESSAGE after it: a one-message log, as Spark detects it per record)."""
    from test_spark_pipeline import by_time

    from rsep.runtime.engine import Engine
    from rsep.spark.parse import END_OF_INPUT
    from rsep.spark.pipeline import SparkPipeline
    from rsep.stream.files import StreamFile
    from rsep.stream.framing import Framer
    from rsep.testing.snippets import ROOT

    stream_file = ROOT.parent / "shared/data/srbench-weather/weather-stream.trig"
    sr = "http://example.org/srbench"
    query = ROOT / "examples" / "srbench-hot.rq"
    if payloads == "frames":
        framer = Framer("trig")
        events = framer.feed(stream_file.read_text()) + framer.finish()
    else:
        from rsep.cli.main import main
        from rsep.stream.writer import DELIMITER, HEADER, split_log

        log = tmp_path / "weather.trig"
        assert main(["convert", str(stream_file), "--to", "rdfm-trig", "-o", str(log), "-q"]) == 0
        assert log.read_text().startswith(HEADER)
        events = [HEADER + m + DELIMITER for m in split_log(log.read_text())]
    assert len(events) == 34  # one self-contained message per event

    eng = Engine()
    eng.register(query.read_text(), source=str(query), default_name=query.stem)
    ref = [o.to_json() for o in eng.run(iter(StreamFile(stream_file, sr)))]
    assert ref

    pipe = SparkPipeline(spark, [query], streams=[(sr, str(stream_file))])
    top = f"rsep/e2e-{payloads}"
    topics = [f"{top}/in", f"{top}/end"]
    open_session(broker, f"rsep-e2e-{payloads}", topics)
    publish(broker, f"{top}/in", events)
    publish(broker, f"{top}/end", [""])
    records = mqtt_records(spark, {
        "host": "127.0.0.1", "port": str(broker), "topic": ",".join(topics),
        "streams": json.dumps({f"{top}/in": sr, f"{top}/end": END_OF_INPUT}),
        "clientId": f"rsep-e2e-{payloads}", "spoolDir": str(tmp_path / "spool")})
    sub = Subscriber(broker, f"{top}/out/#")
    sink = MqttSink(f"mqtt://127.0.0.1:{broker}/{top}/out", state_dir=tmp_path / "sink")
    # A slow trigger gathers the burst into few micro-batches: each costs seconds here.
    q = pipe.start(records, sink, checkpoint=str(tmp_path / "ck"),
                   trigger={"processingTime": "2 seconds"})
    try:
        deadline = time.monotonic() + 40
        while len(sub.got) < len(ref) and time.monotonic() < deadline:
            q.processAllAvailable()
            time.sleep(0.05)
        got = sub.wait(len(ref), timeout=1)
    finally:
        q.stop()
        sink.close()
        sub.close()
    assert by_time([json.loads(p) for p, _ in got]) == by_time(ref)
    assert all(u["rsep-id"].split(":")[0] == u["rsep-batch"] for _, u in got)


def test_rsep_run_engine_spark_reads_an_rdf_message_log_over_mqtt(spark, broker, tmp_path, capsys):
    """Issue 48's "done when": the log ``rsep convert --to rdfm-trig`` writes in the current
    syntax, published one message per broker message (no version label, no MESSAGE: the
    transport delimits them), into ``rsep run --engine spark --stream IRI=mqtt://...
    --stream-format rdfm``: the in-process results, line for line. The broker queues the
    messages for the run's session (rsep.spark.mqtt.session_id), so no sleep waits for it
    to subscribe, and ?idle ends the run."""
    from rsep.cli.main import main
    from rsep.spark.mqtt import session_id
    from rsep.stream.writer import split_log
    from rsep.testing.snippets import ROOT

    stream_file = ROOT.parent / "shared/data/srbench-weather/weather-stream.trig"
    sr = "http://example.org/srbench"
    query = str(ROOT / "examples" / "srbench-hot.rq")
    assert main(["run", query, "--stream", f"{sr}={stream_file}", "-q"]) == 0
    ref = capsys.readouterr().out
    assert ref.count("\n") > 20
    log = tmp_path / "weather.trig"
    assert main(["convert", str(stream_file), "--to", "rdfm-trig", "-o", str(log), "-q"]) == 0
    payloads = split_log(log.read_text())
    assert len(payloads) == 34 and not any("VERSION" in p or "MESSAGE" in p for p in payloads)
    capsys.readouterr()
    ck = tmp_path / "ck"
    url = f"mqtt://127.0.0.1:{broker}/rsep/cli-rdfm?idle=1"
    open_session(broker, session_id(ck, sr, url), ["rsep/cli-rdfm"])
    publish(broker, "rsep/cli-rdfm", payloads)
    assert main(["run", query, "--stream", f"{sr}={url}", "--stream-format", "rdfm", "-q",
                 "--engine", "spark", "--checkpoint", str(ck)]) == 0
    assert capsys.readouterr().out == ref
