"""Peak resident memory of a command's Spark processes: its PySpark Python workers (the
largest one) and the JVM, sampled from /proc every 0.25 s while the command runs.

    .venv/bin/python benchmarks/peak_memory.py .venv/bin/rsep run q.rq --stream IRI=DIR \\
        --engine spark --master 'local[2]' --output OUT.jsonl --format jsonl
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def sample() -> tuple[int, int]:
    """The largest PySpark Python process's and the Spark JVM's resident KiB now."""
    worker = jvm = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/status") as f:
                kib = next((int(line.split()[1]) for line in f if line.startswith("VmRSS")), 0)
        except OSError:  # the process ended meanwhile
            continue
        if b"java" in cmd and b"spark" in cmd:
            jvm = max(jvm, kib)
        elif b"pyspark" in cmd:
            worker = max(worker, kib)
    return worker, jvm


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    peak = [0, 0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            w, j = sample()
            peak[0], peak[1] = max(peak[0], w), max(peak[1], j)
            done.wait(0.25)

    t = threading.Thread(target=poll)
    t.start()
    t0 = time.perf_counter()
    code = subprocess.call(sys.argv[1:])
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    print(f"exit {code}, {wall:.1f} s, peak Python worker RSS {peak[0] / 1024:,.0f} MiB, "
          f"peak JVM RSS {peak[1] / 1024:,.0f} MiB", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
