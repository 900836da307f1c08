"""CORE through pycer (CPython 3.13 venv): offline server, events from the CSV form.

Steady state = reading the CSV into pycer events + CORE's evaluation + fetching its
output; parsing CORE's text output into event lists is timed apart (stage ``parse_s``).

Latency needs CORE's online server (the offline one answers at the end): after the
timed run the same events are streamed to it over ZeroMQ at ``latency_rate`` events/s,
below what both engines sustain, and each complex event's latency is the time from
sending its last event to its callback.
"""

from __future__ import annotations

import csv
import json
import re
import socket
import sys
import time
from typing import TYPE_CHECKING

sys.path.insert(0, __file__.rsplit("/", 1)[0])
if TYPE_CHECKING:  # the type checker reads common as part of rsep
    from rsep.bench.workers.common import finish, load_spec
else:
    from common import finish, load_spec

MATCH = re.compile(r"^\[(\d+),(\d+)\], \((.*)\)\s*$")
EVENT = re.compile(r"attributes: \[(\S+) ")


def main() -> int:
    spec = load_spec()
    import pycer  # only in CORE's venv, which runs this worker: importing the module needs none

    server = pycer.PyOfflineServer()
    server.declare_stream(spec["declare"])
    server.add_query(spec["query"])
    ready = time.time()
    t0 = time.perf_counter()
    n = 0
    batch = []
    for ev in pycer_events(pycer, spec):
        batch.append(ev)
        n += 1
        if len(batch) >= 10_000:
            server.send_events(batch)
            batch = []
    if batch:
        server.send_events(batch)
    text = server.get_output()
    run_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    count = 0
    with open(spec["matches"], "w", encoding="utf-8") as out:
        for line in text.splitlines():
            m = MATCH.match(line)
            if not m:
                continue
            ts = [int(x) for x in EVENT.findall(m.group(3))]
            out.write(json.dumps({"events": ts}) + "\n")
            count += 1
    parse_s = time.perf_counter() - t1
    steady_end = time.time()
    rate = int(spec.get("latency_rate", 20_000))
    lat, online = online_latencies(spec, rate)
    finish(spec, ready, run_s, n, latencies=lat, stages={"parse_output_s": parse_s},
           steady_end=steady_end,
           note=f"latency: online server fed at {rate} events/s; {online} complex events "
                f"online, {count} offline")
    return 0


def pycer_events(pycer, spec: dict):
    """The CSV's rows as pycer events, attributes in the declared order (``columns``)."""
    kinds = {"int": pycer.PyIntValue, "string": pycer.PyStringValue, "double": pycer.PyDoubleValue}
    conv = {"int": int, "string": str, "double": float}
    with open(spec["csv"], encoding="utf-8", newline="") as f:
        rd = csv.reader(f)
        header = next(rd)
        idx = [(header.index(c), kinds[k], conv[k]) for c, k in spec["columns"]]
        for row in rd:
            yield pycer.PyEvent(0, [mk(cv(row[i])) for i, mk, cv in idx])


def _free_ports(k: int) -> list[int]:
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def online_latencies(spec: dict, rate: int) -> tuple[list[float], int]:
    import pycer  # only in CORE's venv, which runs this worker

    router, listener, queries = _free_ports(3)
    server = pycer.PyOnlineServer(router, listener, queries)
    client = pycer.PyClient("tcp://localhost", router)
    stream = client.declare_stream(spec["declare"])
    got: list[tuple[float, int]] = []

    def on_match(found) -> None:
        now = time.perf_counter()
        got.extend((now, ce.end) for ce in found)

    client.subscribe_to_complex_event(on_match, client.add_query(spec["query"]))
    time.sleep(0.5)  # the subscription's socket connects
    sent: list[float] = []
    with pycer.PyStreamer("tcp://localhost", listener) as streamer:
        t0 = time.perf_counter()
        # made as they are sent: the peak memory stays the timed run's
        for i, ev in enumerate(pycer_events(pycer, spec)):
            # sleeping, not spinning: the callbacks need the GIL
            wait = t0 + i / rate - time.perf_counter()
            if wait > 0.0005:
                time.sleep(wait)
            sent.append(time.perf_counter())
            streamer.send_stream(stream.id, ev)
        quiet = time.perf_counter()
        seen = -1
        while time.perf_counter() - quiet < 3.0:  # until 3 s pass with no match
            if len(got) != seen:
                seen, quiet = len(got), time.perf_counter()
            time.sleep(0.05)
    server.shutdown()
    # a complex event's ``end`` is its last event's position in the stream
    return [(t - sent[end]) * 1000 for t, end in got if 0 <= end < len(sent)], len(got)


if __name__ == "__main__":
    sys.exit(main())
