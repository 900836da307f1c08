"""The engines compared, each run as a subprocess in its own environment.

A run is timed in two parts: start-up (process start to the worker's "ready": imports,
JVM, query compilation) and steady state (the worker's own clock from ready to the end
of the stream). Peak memory is the peak resident set of the whole process tree (the
Flink JVM included), sampled from /proc every 20 ms.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"


def peers_dir() -> Path:
    return Path(os.environ.get("RSEP_BENCH_PEERS", ROOT / "benchmarks" / ".peers"))


class NotInstalled(RuntimeError):
    """A peer whose environment is missing; the message says how to install it."""


@dataclass(frozen=True)
class Peer:
    name: str
    title: str
    setup: str | None  # benchmarks/peers/setup_X.sh, None: nothing to install

    def command(self, spec_path: Path) -> list[str]:
        d = peers_dir()
        if self.name in ("rsep", "reference", "naive"):
            worker = "naive_worker.py" if self.name == "naive" else "rsep_worker.py"
            return [sys.executable, str(WORKERS / worker), str(spec_path)]
        if self.name == "core":
            py = d / "core" / "bin" / "python"
            self._need(py.is_file())
            return [str(py), str(WORKERS / "core_worker.py"), str(spec_path)]
        if self.name == "flink":
            py = d / "flink" / "bin" / "python"
            self._need(py.is_file() and any((d / "flink").glob("lib/python*/site-packages/pyflink")))
            return [str(py), str(WORKERS / "flink_worker.py"), str(spec_path)]
        if self.name == "rspjs":
            node = shutil.which("node")
            self._need(node is not None and (d / "rspjs" / "node_modules" / "rsp-js").is_dir())
            return [str(node), str(WORKERS / "rspjs_worker.js"), str(spec_path)]
        if self.name == "esper":
            java = shutil.which("java")
            jar = d / "esper" / "target" / "esper-worker-0.1.0.jar"
            self._need(java is not None and jar.is_file() and (d / "esper" / "lib").is_dir())
            return [str(java), "-cp", f"{jar}:{d / 'esper' / 'lib'}/*", "rsep.bench.EsperWorker",
                    str(spec_path)]
        if self.name == "rsprs":
            exe = d / "rsprs" / "target" / "release" / "rsep-bench-rsprs"
            self._need(exe.is_file())
            return [str(exe), str(spec_path)]
        raise ValueError(f"unknown peer {self.name!r}")

    def _need(self, ok: bool) -> None:
        if not ok:
            raise NotInstalled(f"not installed: run benchmarks/peers/{self.setup}")


PEERS: dict[str, Peer] = {p.name: p for p in (
    Peer("rsep", "rsep (production engine)", None),
    Peer("reference", "rsep reference evaluator", None),
    Peer("core", "CORE (pycer 0.1.6)", "setup_core.sh"),
    Peer("flink", "Apache Flink SQL MATCH_RECOGNIZE (PyFlink)", "setup_flink.sh"),
    Peer("rspjs", "RSP-JS (npm rsp-js)", "setup_rspjs.sh"),
    Peer("naive", "naive: pyoxigraph snapshot per window", None),
    Peer("esper", "Esper 9.0.0 EPL (Maven com.espertech, Java 17)", "setup_esper.sh"),
    Peer("rsprs", "rsp-rs 0.3.5 (crates.io) through our Rust harness", "setup_rsprs.sh"),
)}


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds of the processes, with their waited-for children (utime stime cutime
    cstime of /proc/PID/stat)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, IndexError, ValueError):
            pass
    return total / _TICK


def _rss_kb(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


@dataclass
class RunResult:
    ok: bool
    error: str = ""
    startup_s: float = 0.0
    run_s: float = 0.0
    wall_s: float = 0.0
    events: int = 0
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0  # CPU time of the process tree in the steady state
    latency_ms: dict | None = None
    stages: dict | None = None
    note: str = ""


def run(peer: Peer, spec: dict, workdir: Path, timeout: float = 1800,
        cpu_timeout: bool = False) -> RunResult:
    """Run one worker; ``spec`` gains ``result`` and is written to ``workdir``.

    ``timeout`` is wall-clock seconds, or with ``cpu_timeout`` CPU seconds of the worker's
    process tree (user + system): on a loaded machine a run over it is then a CPU verdict,
    not a scheduling one (wall-clock then stops it only at ten times the limit)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)  # CORE and RSP-JS log to ./logs
    spec = {**spec, "result": str(workdir / "result.json")}
    if peer.name == "rspjs":
        spec["rspjs_dir"] = str(peers_dir() / "rspjs")
    if peer.name == "reference":
        spec["engine"] = "reference"
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    try:
        cmd = peer.command(spec_path)
    except NotInstalled as e:
        return RunResult(False, str(e))
    Path(spec["result"]).unlink(missing_ok=True)
    start = time.time()
    t0 = time.perf_counter()
    with open(workdir / "stderr.txt", "w") as err:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        peak = 0
        cpu: list[tuple[float, float]] = []  # (epoch, CPU seconds of the tree so far)
        while proc.poll() is None:
            tree = _tree(proc.pid)
            peak = max(peak, _rss_kb(tree))
            cpu.append((time.time(), _cpu_s(tree)))
            over = (cpu[-1][1] > timeout or time.perf_counter() - t0 > 10 * timeout
                    if cpu_timeout else time.perf_counter() - t0 > timeout)
            if over:
                proc.kill()
                proc.wait()
                return RunResult(False, f"timed out after {timeout:.0f} s"
                                 + (" of CPU" if cpu_timeout else ""))
            time.sleep(0.02)
    wall = time.perf_counter() - t0
    res_path = Path(spec["result"])
    if proc.returncode != 0 or not res_path.is_file():
        tail = (workdir / "stderr.txt").read_text(errors="replace").strip().splitlines()[-3:]
        return RunResult(False, f"exit {proc.returncode}: " + " | ".join(tail))
    r = json.loads(res_path.read_text())
    peak_mb = max(peak, int(r.get("self_peak_rss_kb") or 0)) / 1024
    # steady-state CPU: the tree's total at the end less its total when the worker was ready
    at_ready = max((c for t, c in cpu if t <= r["ready"]), default=0.0)
    end = r.get("steady_end")
    at_end = cpu[-1][1] if cpu else 0.0
    if end is not None:  # the worker went on after the timed part (CORE's latency run)
        at_end = max((c for t, c in cpu if t <= end), default=at_end)
    steady_cpu = (at_end - at_ready) if cpu else 0.0
    return RunResult(True, "", r["ready"] - start, r["run_s"], wall, r["events"], peak_mb,
                     steady_cpu, r.get("latency_ms"), r.get("stages"), r.get("note", ""))
