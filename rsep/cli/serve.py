"""``rsep serve``: a long-running engine behind an HTTP API and a web console
(rsep.serve; docs/serve.md)."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType

from rsep.cli.explain import explain
from rsep.runtime.engine import Limits
from rsep.runtime.trace import MAX_LINES
from rsep.runtime.watermark import WatermarkPolicy
from rsep.serve.app import build_app
from rsep.serve.guard import MiB, Protection
from rsep.serve.hub import MAX_PENDING, Hub, Settings
from rsep.serve.worker import HISTORY
from rsep.stream.files import TimeConfig
from rsep.stream.source import DeadLetter
from rsep.stream.time import parse_time_unit

DEFAULT_EVAL_SECONDS = 10.0
STOP_S = 1.0  # a signalled server is gone within this, whatever it was doing
P = Protection()


def _positive(text: str) -> int:
    n = _int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _not_negative(text: str) -> int:
    n = _int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {n}")
    return n


def _seconds(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not x > 0 or x == float("inf"):  # (not x > 0: NaN too)
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return x


def _eval_seconds(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0.0") else _seconds(text)


def _watermark(text: str) -> WatermarkPolicy:
    try:
        return WatermarkPolicy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _port(text: str) -> int:
    n = _int(text)
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 to 65535, got {n}")
    return n


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="run the engine as a service: queries registered and "
                       "events posted over HTTP, results pushed (docs/serve.md)")
    s.add_argument("queries", nargs="*", metavar="QUERY_FILE",
                   help="queries registered at start (named after their files)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other needs --token)")
    s.add_argument("--port", type=_port, default=8000)
    s.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every request")
    s.add_argument("--graph", action="append", default=[], metavar="IRI=PATH",
                   help="a background graph; 'default=PATH' for the default graph")
    s.add_argument("--time-unit", help="length of one abstract time unit (e.g. 1m)")
    s.add_argument("--time-predicate", action="append", default=[], metavar="IRI")
    s.add_argument("--time-in-graph", action="store_true")
    s.add_argument("--allowed-lateness", type=_not_negative, default=0, metavar="UNITS",
                   help="accept events this far behind their stream's latest time (reordered)")
    s.add_argument("--watermark", type=_watermark, default=WatermarkPolicy(), metavar="POLICY",
                   help="when engine time moves without a later event: events (default: only "
                   "events and POST /clock move it, as in a replay); idle:SECONDS (after "
                   "SECONDS without an event, to the last event's time plus "
                   "--allowed-lateness); processing (with the wall clock, mapped to event "
                   "time from the first event: one --time-unit per unit, a millisecond for "
                   "dateTime timestamps); see docs/serve.md")
    s.add_argument("--dead-letter", metavar="PATH", help="also write rejected records here")
    s.add_argument("--max-window-triples", type=_positive, default=Limits.max_window_triples)
    s.add_argument("--max-results", type=_positive, default=Limits.max_results)
    s.add_argument("--max-eval-seconds", type=_eval_seconds, default=DEFAULT_EVAL_SECONDS,
                   help="per query: an evaluation still running this long fails its query "
                   f"(default {DEFAULT_EVAL_SECONDS:g}; 0 for none)")
    s.add_argument("--allow-dereference", action="store_true")
    s.add_argument("--history", type=_positive, default=HISTORY, metavar="N",
                   help="results kept per query for subscribers that connect late or resume "
                        f"with Last-Event-ID (default {HISTORY}); the server's memory grows with it")
    s.add_argument("--trace-lines", type=_positive, default=MAX_LINES, metavar="N",
                   help="lines kept of a query's trace (PUT /queries/N/trace; default "
                        f"{MAX_LINES}): older ones are dropped and counted")
    s.add_argument("--max-pending-events", type=_positive, default=MAX_PENDING, metavar="N",
                   help="events queued for one query before POST /events is refused with 429 "
                        f"(default {MAX_PENDING}); a live source is held back instead")
    s.add_argument("--max-query-bytes", type=_positive, default=P.max_query_bytes, metavar="N",
                   help=f"largest query body (default {P.max_query_bytes // MiB} MiB; 413 past it)")
    s.add_argument("--max-event-bytes", type=_positive, default=P.max_event_bytes, metavar="N",
                   help=f"largest POST /events body (default {P.max_event_bytes // MiB} MiB)")
    s.add_argument("--max-graph-bytes", type=_positive, default=P.max_graph_bytes, metavar="N",
                   help=f"largest /graphs body (default {P.max_graph_bytes // MiB} MiB)")
    s.add_argument("--header-timeout", type=_seconds, default=P.header_timeout, metavar="S",
                   help="a request's headers must arrive within this (default "
                        f"{P.header_timeout:g} s), or the connection is closed")
    s.add_argument("--body-timeout", type=_seconds, default=P.body_timeout, metavar="S",
                   help=f"a request's body must arrive within this (default {P.body_timeout:g} s; 408)")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also serve requests for this host name (default: localhost and IP "
                        "addresses only, against DNS rebinding; '*' for any)")
    s.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="also serve requests from web pages of this origin (scheme://host:port; "
                        "default: only the server's own pages; '*' for any)")
    s.add_argument("--log-level", default="warning",
                   choices=["critical", "error", "warning", "info", "debug"])


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(args: argparse.Namespace) -> int:
    if not args.token and not _loopback(args.host):
        print(f"rsep: --host {args.host} is not a loopback address: give --token so that "
              "only clients with it are served", file=sys.stderr)
        return 2
    import uvicorn  # heavy (asyncio loops, h11, websockets): only a started server needs it

    tc = TimeConfig.with_predicate(args.time_predicate[0], args.time_in_graph) \
        if len(args.time_predicate) == 1 else TimeConfig(
            point=tuple(args.time_predicate) or TimeConfig().point, in_graph=args.time_in_graph)
    settings = Settings(
        time_unit_ms=parse_time_unit(args.time_unit) if args.time_unit else None, time=tc,
        allowed_lateness=args.allowed_lateness,
        limits=Limits(args.max_window_triples, args.max_results, args.max_eval_seconds or None),
        allow_dereference=args.allow_dereference, history=args.history,
        max_pending=args.max_pending_events, watermark=args.watermark,
        trace_lines=args.trace_lines)
    protection = Protection(
        allow_hosts=tuple(args.allow_host), allow_origins=tuple(args.allow_origin),
        max_query_bytes=args.max_query_bytes, max_event_bytes=args.max_event_bytes,
        max_graph_bytes=args.max_graph_bytes, header_timeout=args.header_timeout,
        body_timeout=args.body_timeout)
    hub = Hub(settings, DeadLetter(args.dead_letter))
    for spec in args.graph:
        iri, sep, path = spec.partition("=")
        if not sep:
            raise ValueError(f"--graph must be IRI=PATH, got {spec!r}")
        p = Path(path)
        hub.put_graph(iri.strip("<>"), p.read_bytes(), "application/n-triples"
                      if p.suffix in (".nt", ".ntriples") else "text/turtle")
    for qf in args.queries:
        hub.register(Path(qf).read_text(encoding="utf-8"), name=Path(qf).stem)
    # bound here, not by uvicorn, so that --port 0 can say which port it got; connections
    # wait in the backlog until the server's loop runs
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        sock.close()
        if e.errno != errno.EADDRINUSE:
            raise
        print(f"rsep serve: port {args.port} on {args.host} is in use (another rsep serve?): "
              "stop that server, or give another --port (--port 0 takes a free one)",
              file=sys.stderr)
        return 1
    sock.listen(2048)
    port = sock.getsockname()[1]
    # (imported here: uvicorn and h11 cost ~30 ms, and rsep --version imports this module)
    from rsep.serve.protocol import GuardedH11

    app = build_app(hub, args.token, protection,
                    explain=lambda q: explain(q, time_unit_ms=settings.time_unit_ms))
    http = type("Http", (GuardedH11,), {"header_timeout": args.header_timeout,
                                        "body_timeout": args.body_timeout})

    class Server(uvicorn.Server):
        """Ends the result streams as soon as it is told to stop (an open stream held
        uvicorn's graceful shutdown until it gave up and cancelled it, with tracebacks),
        and is gone within STOP_S even when something holds it (a request still parsing
        in a thread, a source that does not close)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                app.state.end_streams()
                threading.Thread(target=_stop_anyway, daemon=True).start()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, log_level=args.log_level, lifespan="on", http=http,
                            timeout_graceful_shutdown=1, timeout_keep_alive=5)
    print(f"rsep serve: listening on http://{args.host}:{port}", file=sys.stderr, flush=True)
    Server(config).run(sockets=[sock])
    return 0


def _stop_anyway() -> None:
    threading.Event().wait(STOP_S - 0.1)
    print("rsep serve: stopped before its shutdown was done", file=sys.stderr, flush=True)
    os._exit(128 + signal.SIGINT)
