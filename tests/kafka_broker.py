"""A real Kafka broker for the tests: one KRaft node (broker and controller in one JVM) from
the org.apache.kafka jars that ``make kafka-deps`` copies from Maven Central into
.kafka/broker/ (tests/kafka/pom.xml), started on free ports and torn down; and a producer and
a consumer (confluent-kafka, rsep's client)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / ".kafka" / "broker"
JAVA = shutil.which("java") or "java"
# a small broker starts in ~3 s: C1 only, a small heap, one GC thread
JVM = ["-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
       "-Djava.awt.headless=true"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One broker in ``directory``; :meth:`kill` ends it at once (SIGKILL)."""

    def __init__(self, directory: Path) -> None:
        if not any(JARS.glob("kafka_2.13-*.jar")):
            pytest.fail(f"no Kafka broker jars in {JARS}: run `make kafka-deps` (make test does)")
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port, cport = free_port(), free_port()
        self.servers = f"127.0.0.1:{self.port}"
        logs = directory / "logs"
        self.props = directory / "server.properties"
        self.props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"controller.quorum.voters=1@127.0.0.1:{cport}",
            f"log.dirs={logs}", "num.partitions=1", "auto.create.topics.enable=true",
            "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0", ""]))
        log4j = directory / "log4j2.properties"
        log4j.write_text("rootLogger.level=WARN\nrootLogger.appenderRef.f.ref=F\n"
                         "appender.f.type=File\nappender.f.name=F\n"
                         f"appender.f.fileName={directory / 'broker.log'}\n"
                         "appender.f.layout.type=PatternLayout\n"
                         "appender.f.layout.pattern=%d %p %c: %m%n\n")
        self.java = [JAVA, *JVM, f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{JARS}/*"]
        subprocess.run([*self.java, "kafka.tools.StorageTool", "format", "-t",
                        uuid.uuid4().hex[:22], "-c", str(self.props)],
                       check=True, capture_output=True, timeout=60)
        self.proc = subprocess.Popen([*self.java, "kafka.Kafka", str(self.props)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait()

    def _wait(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + 60
        admin = AdminClient({"bootstrap.servers": self.servers, "log_level": 0})
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited: {self.proc.stderr.read().decode()[-2000:]}"
                                   f"\n{self.log()}")
            try:
                md = admin.list_topics(timeout=1)
                if md.brokers:
                    return
            except Exception:  # not listening yet
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the Kafka broker did not start in 60 s\n{self.log()}")
            time.sleep(0.2)

    def log(self) -> str:
        p = self.dir / "broker.log"
        return p.read_text()[-3000:] if p.exists() else ""

    def create_topic(self, name: str, partitions: int = 1) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.servers, "log_level": 0})
        for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            f.result(30)
        return name

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def produce(servers: str, topic: str, values: list[str | bytes], partition: int | None = None) -> None:
    """Each value one record, acknowledged by the broker before this returns."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "log_level": 0})
    failed: list[str] = []
    for v in values:
        kw = {} if partition is None else {"partition": partition}
        p.produce(topic, v.encode() if isinstance(v, str) else v,
                  on_delivery=lambda err, msg: err and failed.append(str(err)), **kw)
    assert p.flush(30) == 0 and not failed, failed


def consume(servers: str, topic: str, n: int | None = None, idle: float = 3.0,
            headers: bool = False) -> list:
    """The values of a topic's records from its start (``headers``: (value, headers)
    pairs), until ``n`` are read or none came for ``idle`` seconds."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": servers, "group.id": f"t-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "log_level": 0})
    out: list = []
    last = time.monotonic()
    try:
        while True:  # the topic may not be there yet (its producer creates it)
            md = c.list_topics(topic, timeout=10).topics[topic]
            if md.error is None and md.partitions:
                break
            if time.monotonic() - last >= idle:
                return out
            time.sleep(0.2)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(md.partitions)])
        while (n is None or len(out) < n) and time.monotonic() - last < idle:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            last = time.monotonic()
            v = m.value().decode()
            out.append((v, dict((k, x.decode()) for k, x in m.headers() or [])) if headers else v)
    finally:
        c.close()
    return out
