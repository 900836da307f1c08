"""What keeps ``rsep serve`` to its own clients and its memory to its limits.

A service on 127.0.0.1 is reachable from every web page its user opens: a page can POST
to it (a CORS "simple request": ``text/plain``, no preflight), open a WebSocket to it
(WebSockets have no CORS at all), or rebind a name it controls to 127.0.0.1 and then be
same-origin with it (DNS rebinding). :class:`Guard` refuses all three: a request whose
``Host`` is a name other than ``localhost`` (an IP address cannot be rebound, so any is
taken) or one given with ``--allow-host``; a request whose ``Origin`` is not the server's own
(its console) or given with ``--allow-origin``; a POST or PUT whose Content-Type is not one
of its route's (JSON, SPARQL, RDF: each needs a preflight, which the server never answers).

:func:`read_body` reads a body up to its route's limit and within the body timeout;
:class:`rsep.serve.protocol.GuardedH11` closes connections whose request does not arrive in
time (slow loris).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("rsep.serve")

MiB = 1 << 20
CONTROL_BYTES = 64 * 1024  # /clock and /streams take a small JSON object


class Refused(Exception):
    """A request the server will not carry out: its status and the reason (the JSON
    ``error``)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass(frozen=True)
class Protection:
    """The server's limits on what a client may send (``rsep serve``'s flags)."""

    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_query_bytes: int = 1 * MiB
    max_event_bytes: int = 16 * MiB
    max_graph_bytes: int = 64 * MiB
    header_timeout: float = 10.0
    body_timeout: float = 60.0


def clip(message: str, line: int = 240, total: int = 2000) -> str:
    """An error message that cannot carry a client's input back whole: a query's error
    quotes its line, and a one-line 100 MB query made a 100 MB error."""
    lines = [x if len(x) <= line else x[:line] + "…" for x in message.split("\n")]
    out = "\n".join(lines)
    return out if len(out) <= total else out[:total] + "… (cut)"


def error_body(message: str) -> bytes:
    return json.dumps({"error": clip(message)}, ensure_ascii=False).encode()


def _media(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for k, v in headers:
        if k == b"content-type":
            return v.decode("latin-1").split(";")[0].strip().lower()
    return None


def _host_name(host: str) -> str:
    """``host[:port]`` (``[v6]:port``) without its port, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]")[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Guard:
    """Refuses, before any route runs, the requests no client of this server sends (module
    docstring): 421 for a foreign Host, 403 for a foreign Origin (a WebSocket's too), 415
    for a state-changing body of a type a page may send without asking."""

    def __init__(self, app: ASGIApp, protection: Protection,
                 bodies: dict[tuple[str, str], frozenset[str]]) -> None:
        self.app = app
        self.hosts = {h.lower() for h in protection.allow_hosts}
        self.origins = {o.lower().rstrip("/") for o in protection.allow_origins}
        self.bodies = bodies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        if scope["type"] == "websocket":
            if "websocket.http.response" not in scope.get("extensions", {}):
                await send({"type": "websocket.close", "code": 1008})
                return
            prefix = "websocket."
        else:
            prefix = ""
        body = error_body(message)
        await send({"type": prefix + "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": prefix + "http.response.body", "body": body})

    def check(self, scope: Scope) -> tuple[int, str] | None:
        headers = scope.get("headers", [])
        host = origin = None
        for k, v in headers:
            if k == b"host":
                host = v.decode("latin-1")
            elif k == b"origin":
                origin = v.decode("latin-1")
        if host is not None and not self._host_allowed(_host_name(host)):
            return 421, (f"Host {_host_name(host)!r} is not this server's: it serves localhost "
                         "and IP addresses (give other names with --allow-host)")
        if origin is not None and not self._origin_allowed(origin, host):
            return 403, (f"Origin {origin[:200]!r} may not use this server: only its own pages "
                         "may (allow another origin with --allow-origin)")
        if scope["type"] == "http":
            allowed = self.bodies.get((scope["path"], scope["method"]))
            if allowed is not None:
                media = _media(headers)
                if media not in allowed:
                    return 415, (f"{scope['method']} {scope['path']} takes a body of type "
                                 f"{', '.join(sorted(allowed))}, not "
                                 f"{media or 'one without a Content-Type'}")
        return None

    def _host_allowed(self, name: str) -> bool:
        return ("*" in self.hosts or name in self.hosts or name == "localhost" or _ip(name))

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        o = origin.strip().lower().rstrip("/")
        if "*" in self.origins or o in self.origins:
            return True
        # the server's own pages (the console): the origin is the address it was reached at
        parts = urlsplit(o)
        return host is not None and parts.scheme == "http" and parts.netloc == host.strip().lower()


async def read_body(request: Request, limit: int, timeout: float, what: str) -> bytes:
    """The request's body: 413 past ``limit`` bytes (before reading any when the
    Content-Length says so), 408 when it has not all come within ``timeout`` seconds."""
    size = request.headers.get("content-length", "")
    too_large = Refused(413, f"{what} body is larger than the limit of {limit} bytes "
                             f"({_flag(what)})")
    if size.isdigit() and int(size) > limit:
        raise too_large
    buf = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                buf += chunk
                if len(buf) > limit:
                    raise too_large
    except TimeoutError:
        raise Refused(408, f"{what} body did not arrive within {timeout:g} s (--body-timeout)",
                      {"Connection": "close"}) from None
    except ClientDisconnect:
        raise Refused(400, "the client closed the connection before its body was sent") from None
    return bytes(buf)


def _flag(what: str) -> str:
    return {"the query": "--max-query-bytes", "the events": "--max-event-bytes",
            "the graph": "--max-graph-bytes"}.get(what, "a JSON object of the clock or a source")


def nesting(text: str) -> int:
    """The deepest nesting of brackets in ``text`` (those in literals counted too)."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth = max(depth - 1, 0)
    return deepest
