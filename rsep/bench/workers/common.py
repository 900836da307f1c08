"""Shared by the Python workers (any Python >= 3.10, no rsep import: pycer's and PyFlink's
venvs do not have rsep installed)."""

from __future__ import annotations

import json
import resource
import sys
import time


def load_spec() -> dict:
    with open(sys.argv[1], encoding="utf-8") as f:
        return json.load(f)


def percentiles(ms: list[float]) -> dict | None:
    if not ms:
        return None
    s = sorted(ms)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]

    return {"p50": q(0.50), "p99": q(0.99), "max": s[-1], "n": len(s)}


def peak_rss_kb() -> int:
    """This process's peak resident memory since it was started. Not ru_maxrss: Linux carries
    that across exec from the forked copy of the parent (the bench, which may hold a previous
    run's results), while /proc's VmHWM belongs to this program's own memory."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            hwm = [int(line.split()[1]) for line in f if line.startswith("VmHWM:")]
    except OSError:  # no /proc (not Linux)
        hwm = []
    return hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def finish(spec: dict, ready: float, run_s: float, events: int, *, latencies: list[float] | None = None,
           stages: dict | None = None, note: str = "", steady_end: float | None = None) -> None:
    """``steady_end``: when the timed part ended, if the worker did more after it (the
    steady state's CPU time is taken between ``ready`` and it); by default now, so that
    the interpreter's exit (freeing the engine's objects and stores, 0.1-0.15 CPU-s for
    rsep on citybench-join) is not counted as steady-state CPU, as it is not in ``run_s``."""
    if steady_end is None:
        steady_end = time.time()
    out = {"ready": ready, "run_s": run_s, "events": events, "steady_end": steady_end,
           "latency_ms": percentiles(latencies or []),
           "self_peak_rss_kb": peak_rss_kb(),
           "stages": stages or {}, "note": note, "finished": time.time()}
    with open(spec["result"], "w", encoding="utf-8") as f:
        json.dump(out, f)
