"""Run a command; report its wall time and the peak total RSS of its process tree.

    .venv/bin/python benchmarks/peak_rss.py -- .venv/bin/rsep run q.rq --engine spark --batch ...

A Spark job's memory is spread over processes (the driver's Python, the JVM, the Python
workers), so the tree's RSS is summed, sampled every 0.2 s from /proc (Linux only).
The command's stdout and stderr pass through; the report is the last line on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def tree_rss(root: int) -> int:
    kids = _children()
    total, todo = 0, [root]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue  # the process ended between listing and reading: it holds nothing now
    return total


def main() -> int:
    argv = sys.argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    t0 = time.perf_counter()
    p = subprocess.Popen(argv)
    peak = 0
    while p.poll() is None:
        peak = max(peak, tree_rss(p.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall_seconds": round(wall, 1), "peak_rss_mib": round(peak / 2**20),
                      "exit": p.returncode, "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}),
          file=sys.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
