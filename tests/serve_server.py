"""A real ``rsep serve`` process for the tests, and clients for its result streams."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from websockets.sync.client import connect

from rsep.testing.snippets import ROOT

COUPON = ROOT / "examples" / "coupon"
# the Content-Types a client sends (rsep serve refuses a state-changing body without one of
# its route's, as a web page of another origin could send it)
SPARQL = {"Content-Type": "application/sparql-query"}
TRIG = {"Content-Type": "application/trig"}
NQUADS = {"Content-Type": "application/n-quads"}
NDJSON = {"Content-Type": "application/x-ndjson"}


@contextmanager
def serve(*args: str) -> Iterator[httpx.Client]:
    """``rsep serve --port 0 ARGS`` in a process of its own; a client on its address."""
    with serve_process(*args) as (client, _):
        yield client


@contextmanager
def serve_process(*args: str) -> Iterator[tuple[httpx.Client, subprocess.Popen[str]]]:
    """:func:`serve`, and the server's process (its stderr a pipe, read up to the line that
    says where it listens)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from rsep.cli.main import main; "
                             "sys.exit(main())", "serve", "--port", "0", *args],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stderr is not None
        before = []  # (warnings, e.g. that the compiled build is older than the source)
        while not (line := proc.stderr.readline()).startswith("rsep serve: listening on http://"):
            assert line, "rsep serve ended before listening:\n" + "".join(before)
            before.append(line)
        url = line.split()[-1]
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


class Reader(threading.Thread):
    """Collects one query's items from its SSE stream (or WebSocket) until the stream ends."""

    def __init__(self, client: httpx.Client, name: str, *, ws: bool = False,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.url = str(client.base_url).rstrip("/")
        self.name, self.ws, self.headers = name, ws, headers or {}
        self.items: list[tuple[str, dict]] = []
        self.ready = threading.Event()

    def run(self) -> None:
        if self.ws:
            with connect(self.url.replace("http", "ws", 1) + f"/queries/{self.name}/ws",
                         additional_headers=self.headers) as ws:
                self.ready.set()
                for msg in ws:
                    d = json.loads(msg)
                    self.items.append(("error" if "error" in d else "result", d))
            return
        with httpx.stream("GET", f"{self.url}/queries/{self.name}/results", headers=self.headers,
                          timeout=60) as r:
            self.ready.set()
            kind = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind is not None:
                    self.items.append((kind, json.loads(line[6:])))
                    if kind == "end":
                        return

    def results(self, timeout: float = 30) -> list[dict]:
        self.join(timeout)
        assert not self.is_alive(), f"the result stream of {self.name} did not end"
        return [d for k, d in self.items if k == "result"]


def readers(client: httpx.Client, *names: str) -> dict[str, list[Reader]]:
    """An SSE and a WebSocket reader per query, connected."""
    out = {n: [Reader(client, n), Reader(client, n, ws=True)] for n in names}
    for rs in out.values():
        for r in rs:
            r.start()
            assert r.ready.wait(10)
    time.sleep(0.2)  # the subscriptions are made just after the connection is up
    return out
