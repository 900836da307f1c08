"""CORE through pycer (CPython 3.13 venv): offline server, events from the CSV form.

Steady state = reading the CSV into pycer events + CORE's evaluation + fetching its
output; parsing CORE's text output into event lists is timed apart (stage ``parse_s``).
"""

from __future__ import annotations

import csv
import json
import re
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import finish, load_spec  # noqa: E402

MATCH = re.compile(r"^\[(\d+),(\d+)\], \((.*)\)\s*$")
EVENT = re.compile(r"attributes: \[(\S+) ")


def main() -> int:
    spec = load_spec()
    import pycer

    server = pycer.PyOfflineServer()
    server.declare_stream(spec["declare"])
    server.add_query(spec["query"])
    columns = spec["columns"]  # (name, type) in the declared order
    kinds = {"int": pycer.PyIntValue, "string": pycer.PyStringValue, "double": pycer.PyDoubleValue}
    conv = {"int": int, "string": str, "double": float}
    ready = time.time()
    t0 = time.perf_counter()
    n = 0
    with open(spec["csv"], encoding="utf-8", newline="") as f:
        rd = csv.reader(f)
        header = next(rd)
        idx = [(header.index(c), kinds[k], conv[k]) for c, k in columns]
        batch = []
        for row in rd:
            batch.append(pycer.PyEvent(0, [mk(cv(row[i])) for i, mk, cv in idx]))
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
    finish(spec, ready, run_s, n, stages={"parse_output_s": time.perf_counter() - t1},
           note="latency not measurable: pycer's offline server returns all output at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
