"""A Spark standalone cluster on 127.0.0.1 for the tests: a master and workers as separate
processes (spark-class from the pyspark wheel), each worker with its own work directory
and one core, on a machine of its own as far as Python goes.

Each worker runs in its own mount namespace (``unshare -m``, root only) in which empty
tmpfs mounts hide the rsep checkout, the driver's virtual environment and the base
interpreter's site-packages: its executors can start the base interpreter (at the path
the shipped environment links to) but find nothing installed in it, as on a fresh node.
The Spark home (the wheel's ``pyspark`` folder, inside the hidden virtual environment) is
bind-mounted at a path of the cluster's directory first, as a node's own Spark install.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def can_isolate() -> str | None:
    """Why a cluster of bare workers cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (unshare -m and tmpfs mounts give each worker a bare Python)"
    if not shutil.which("unshare") or not shutil.which("java"):
        return "needs unshare (util-linux) and java"
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        "mount -t tmpfs -o size=1m t /mnt"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"unshare -m with a tmpfs mount failed here: {p.stderr.strip()}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def hidden_paths() -> list[str]:
    """What a worker must not see: the checkout, the driver's environment, and whatever
    the base interpreter has installed."""
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    paths = {str(ROOT), os.path.realpath(sys.prefix), base["purelib"], base["platlib"]}
    user = sysconfig.get_paths(scheme="posix_user")["purelib"]
    if os.path.isdir(user):
        paths.add(user)
    # nested paths: the outer mount hides the inner ones
    ordered = sorted(p for p in paths if os.path.isdir(p))
    return [p for p in ordered if not any(p != q and p.startswith(q + "/") for q in ordered)]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's processes: nothing that names the driver's Python."""
    venv_bin = os.path.join(os.path.realpath(sys.prefix), "bin")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "RSEP_", "SPARK_", "PYTHON"))
           and k not in ("VIRTUAL_ENV",)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and os.path.realpath(p) != venv_bin
                                  and not p.startswith(str(ROOT)))
    env["SPARK_NO_DAEMONIZE"] = "1"
    # every process binds and advertises 127.0.0.1 (not the host's interface address,
    # which Spark picks when the host name resolves to loopback)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


class Cluster:
    """A master and ``workers`` one-core workers; :meth:`stop` ends every process it
    started (also those of workers restarted on the way)."""

    def __init__(self, base: Path, workers: int = 2, memory: str = "1500m") -> None:
        self.base = base
        self.memory = memory
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.home = base / "spark-home"  # the bind mount's target
        self.home.mkdir(parents=True, exist_ok=True)
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen | None] = [None] * workers
        self.logs: list[Path] = []
        self.master = self._spawn(
            "master", [str(spark_home() / "bin" / "spark-class"),
                       "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(self.port), "--webui-port", str(self.ui)],
            SPARK_HOME=str(spark_home()),
            SPARK_MASTER_OPTS="-Dspark.worker.timeout=15 -Dspark.deploy.maxExecutorRetries=50")
        for i in range(workers):
            self.start_worker(i)
        self.wait_workers(workers)

    def _spawn(self, name: str, cmd: list[str], **env: str) -> subprocess.Popen:
        log = self.base / f"{name}-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.base,
                                 env=clean_env(SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1",
                                               SPARK_DAEMON_MEMORY="512m", **env),
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def start_worker(self, i: int) -> subprocess.Popen:
        work = self.base / f"worker{i}"
        work.mkdir(exist_ok=True)
        script = (
            'set -e; mount --bind "$RSEP_SPARK_SRC" "$SPARK_HOME"; '
            'for p in $RSEP_HIDE; do mount -t tmpfs -o size=1m,mode=755 rsep-hidden "$p"; done; '
            'exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "$@"')
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "worker",
               "--host", "127.0.0.1", "--cores", "1", "--memory", self.memory,
               "--work-dir", str(work), "--webui-port", "0", self.url]
        p = self._spawn(f"worker{i}", cmd, SPARK_HOME=str(self.home),
                        RSEP_SPARK_SRC=str(spark_home()), RSEP_HIDE=" ".join(hidden_paths()),
                        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false")
        self.workers[i] = p
        return p

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state()["workers"] if w["state"] == "ALIVE")
        except (OSError, ValueError):
            # not up yet: no listener, or (seen under load, while the master starts) an answer
            # on its UI port that is not its JSON yet
            return 0

    def wait_workers(self, n: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive_workers() >= n:
                return
            for p in self.procs:
                if p.poll() is not None and p in (self.master, *self.workers):
                    raise RuntimeError(f"a cluster process exited ({p.args[:3]}): "
                                       + self.tail())
            time.sleep(0.3)
        raise RuntimeError(f"fewer than {n} workers registered in {timeout} s: " + self.tail())

    def tail(self, lines: int = 15) -> str:
        out = []
        for log in self.logs:
            if log.exists():
                text = log.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def executors(self, i: int) -> list[int]:
        """PIDs of the executor JVMs worker ``i`` started (its child processes)."""
        w = self.workers[i]
        if w is None:
            return []
        return [pid for pid, ppid, cmd in _processes()
                if ppid == w.pid and "CoarseGrainedExecutorBackend" in cmd]

    def kill_worker(self, i: int) -> None:
        """The whole worker at once (its JVM, executors and Python workers): SIGKILL to
        its process group, as a node that dies."""
        w = self.workers[i]
        assert w is not None
        os.killpg(w.pid, signal.SIGKILL)
        w.wait()
        self.workers[i] = None

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        # executors outlive a worker killed by SIGTERM only briefly; any left are ours
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _processes() -> list[tuple[int, int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.append((int(d.name), ppid, cmd))
    return out
