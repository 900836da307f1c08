"""``rsep serve``: a long-running engine behind an HTTP API and a web console
(rsep.serve; docs/serve.md)."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path

from rsep.runtime.engine import Limits
from rsep.serve.app import build_app
from rsep.serve.hub import HISTORY, Hub, Settings
from rsep.stream.files import TimeConfig
from rsep.stream.source import DeadLetter
from rsep.stream.time import parse_time_unit

DEFAULT_EVAL_SECONDS = 10.0


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="run the engine as a service: queries registered and "
                       "events posted over HTTP, results pushed (docs/serve.md)")
    s.add_argument("queries", nargs="*", metavar="QUERY_FILE",
                   help="queries registered at start (named after their files)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other needs --token)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every request")
    s.add_argument("--graph", action="append", default=[], metavar="IRI=PATH",
                   help="a background graph; 'default=PATH' for the default graph")
    s.add_argument("--time-unit", help="length of one abstract time unit (e.g. 1m)")
    s.add_argument("--time-predicate", action="append", default=[], metavar="IRI")
    s.add_argument("--time-in-graph", action="store_true")
    s.add_argument("--allowed-lateness", type=int, default=0, metavar="UNITS",
                   help="accept events this far behind their stream's latest time (reordered)")
    s.add_argument("--dead-letter", metavar="PATH", help="also write rejected records here")
    s.add_argument("--max-window-triples", type=int, default=Limits.max_window_triples)
    s.add_argument("--max-results", type=int, default=Limits.max_results)
    s.add_argument("--max-eval-seconds", type=float, default=DEFAULT_EVAL_SECONDS,
                   help="per query: an evaluation still running this long fails its query "
                   f"(default {DEFAULT_EVAL_SECONDS:g}; 0 for none)")
    s.add_argument("--allow-dereference", action="store_true")
    s.add_argument("--history", type=_positive, default=HISTORY, metavar="N",
                   help="results kept per query for subscribers that connect late or resume "
                        f"with Last-Event-ID (default {HISTORY}); the server's memory grows with it")
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
        allow_dereference=args.allow_dereference, history=args.history)
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
    sock.bind((args.host, args.port))
    sock.listen(2048)
    port = sock.getsockname()[1]
    # open result streams would hold a graceful shutdown forever
    config = uvicorn.Config(build_app(hub, args.token), log_level=args.log_level, lifespan="on",
                            timeout_graceful_shutdown=2)
    print(f"rsep serve: listening on http://{args.host}:{port}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
