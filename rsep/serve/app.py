"""The HTTP API of ``rsep serve`` (Starlette): queries, events, graphs, results as
Server-Sent Events and WebSocket, health, statistics, the dead letter and the console.
The routes are described in :mod:`rsep.serve.openapi` (served at /openapi.json)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import shutil
import subprocess
import urllib.parse
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any

import pyoxigraph as ox
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from rsep.algebra.output import EngineError
from rsep.algebra.query import Query
from rsep.algebra.spaseq import SpaseqQuery
from rsep.lang import QueryError
from rsep.serve.guard import CONTROL_BYTES, Guard, Protection, Refused, clip, nesting, read_body
from rsep.serve.hub import Busy, DuplicateName, Hub, NoTrace
from rsep.serve.ingest import FORMATS as EVENT_FORMATS
from rsep.serve.ingest import body_format
from rsep.serve.openapi import schema
from rsep.serve.push import (
    FORMATS,
    MESSAGE_EVENT,
    MESSAGE_TYPE_HEADER,
    MESSAGE_TYPES,
    TEXT_FORMATS,
    Renderer,
    negotiate_subprotocol,
    result_format,
)
from rsep.serve.worker import Item, QueryWorker, graph_results
from rsep.spaseq.explain import to_dot

KEEPALIVE_S = 15.0  # an SSE comment this often, so a gone client is noticed
MAX_NESTING = 200  # brackets in a SPARQL Update
log = logging.getLogger("rsep.serve")

# what each state-changing route takes: none of them a type a web page may POST without a
# preflight (text/plain, forms), so no page of another origin can drive the server
JSON = frozenset({"application/json"})
QUERY_TYPES = JSON | {"application/sparql-query"}
# (octet-stream: the body's format given by ?format=)
EVENT_TYPES = frozenset(k for k in EVENT_FORMATS if "/" in k) | {"application/octet-stream"}
RDF_TYPES = frozenset(f.media_type for f in (
    ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS, ox.RdfFormat.TRIG,
    ox.RdfFormat.N3, ox.RdfFormat.RDF_XML))
BODIES = {("/queries", "POST"): QUERY_TYPES, ("/events", "POST"): EVENT_TYPES,
          ("/streams", "POST"): JSON, ("/clock", "POST"): JSON,
          ("/graphs", "PUT"): RDF_TYPES, ("/graphs", "POST"): RDF_TYPES | {"application/sparql-update"}}

# what a subscriber's queue receives besides the query's items
SHUTDOWN = Item("shutdown", 0, {})  # the server is stopping: the stream ends now
LAGGED = Item("lagged", 0, {})  # the subscriber fell too far behind: resume from its last id


# the console's bundle (console/, built by `make console` into rsep/serve/static/)
STATIC = resources.files("rsep.serve").joinpath("static")
CONSOLE_FILES = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
CONSOLE_MISSING = """<!doctype html><meta charset="utf-8"><title>rsep serve</title>
<p>The console's bundle is not built: run <code>make console</code> in rsep's checkout (it
needs node and npm; <code>make test</code> and <code>make demo</code> build it too). The HTTP
API works without it: <a href="/openapi.json">/openapi.json</a>.</p>"""


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": clip(message)}, status_code=status, headers=headers)


def _seq(v: str | None) -> int:
    """A resumption id (0: from the start); Python's int() refuses 4,301 digits and more."""
    return int(v) if v and v.isascii() and v.isdigit() and len(v) < 19 else 0


def _describe(w: QueryWorker) -> dict[str, Any]:
    return {**w.stats(), "query": w.text}


class BearerAuth:
    """Every request (HTTP and WebSocket) needs ``Authorization: Bearer TOKEN``, or
    ``?token=TOKEN`` (a browser's EventSource and WebSocket cannot set headers)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                               headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        given = b""
        for k, v in scope.get("headers", []):
            if k == b"authorization" and v[:7].lower() == b"bearer ":
                given = v[7:].strip()
        if not given:
            for part in scope.get("query_string", b"").split(b"&"):
                if part.startswith(b"token="):
                    given = part[6:]
        return hmac.compare_digest(given, self.token)


def build_app(hub: Hub, token: str | None = None,
              protection: Protection | None = None,
              explain: Callable[[Query], str] | None = None) -> Starlette:
    """The ASGI application over ``hub``; with ``token``, every route needs it.
    ``app.state.end_streams()`` (from any thread) ends every open result stream, so that a
    stopping server is not held by its subscribers. ``explain`` gives
    ``/queries/N/explain`` (rsep.cli's, which this layer cannot import)."""
    guard = protection or Protection()
    streams: set[asyncio.Queue[Item]] = set()

    async def console(request: Request) -> Response:
        if not STATIC.joinpath("console.js").is_file():
            # the bundle is built from console/ by npm, never committed
            return HTMLResponse(CONSOLE_MISSING, status_code=503)
        html = resources.files("rsep.serve").joinpath("console.html").read_text(encoding="utf-8")
        if given := request.query_params.get("token"):
            # the page's own script and style are requests too (a <script> sends no header)
            t = "?token=" + urllib.parse.quote(given, safe="")
            html = html.replace("/console/console.js", "/console/console.js" + t) \
                       .replace("/console/console.css", "/console/console.css" + t)
        return HTMLResponse(html)

    async def console_file(request: Request) -> Response:
        name = request.path_params["file"]
        if name not in CONSOLE_FILES:
            return _error(404, "no such file")
        f = STATIC.joinpath(name)
        if not f.is_file():
            return _error(404, "the console's bundle is not built: run `make console`")
        return Response(f.read_bytes(), media_type=CONSOLE_FILES[name],
                        headers={"Cache-Control": "no-cache"})

    async def explain_query(request: Request) -> Response:
        w = _worker(request)
        if w is None:
            return _error(404, "no such query")
        if explain is None:
            return _error(400, "this server was built without rsep explain")
        try:
            return Response(explain(w.query), media_type="text/plain; charset=utf-8")
        except ValueError as e:
            return _error(400, str(e))

    def _trace(w: QueryWorker, since: int = 0) -> Response:
        log = w.trace_log
        if log is None:
            return _error(404, f"query {w.name} has no trace: PUT /queries/{w.name}/trace "
                               '{"key": "?VAR=VALUE"} starts one')
        return JSONResponse({"key": w.trace_key, "limit": log.lines.maxlen,
                             "dropped": log.dropped, "lines": log.since(since)})

    async def get_trace(request: Request) -> Response:
        w = _worker(request)
        if w is None:
            return _error(404, "no such query")
        return _trace(w, _seq(request.query_params.get("since")))

    async def put_trace(request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            return _error(415, f"PUT {request.url.path} takes a body of type application/json, "
                               f"not {media or 'one without a Content-Type'}")
        try:
            d = json.loads(await read_body(request, CONTROL_BYTES, guard.body_timeout,
                                           "the trace") or b"{}")
            key = d.get("key") if isinstance(d, dict) else None
            if not isinstance(key, str):
                raise ValueError('the body must be {"key": "?VAR=VALUE"} (e.g. '
                                 '{"key": "?sensor=:s1"}, a prefixed name of the query\'s '
                                 "PREFIXes, an <iri> or a literal's lexical form)")
            w = await run_in_threadpool(hub.trace, request.path_params["name"], key)
        except NoTrace as e:
            return _error(404, str(e))
        except (ValueError, RecursionError) as e:  # (json: nesting thousands deep)
            return _error(400, str(e))
        return _trace(w)

    async def delete_trace(request: Request) -> Response:
        w = _worker(request)
        if w is None:
            return _error(404, "no such query")
        if w.trace_log is None:
            return _error(404, f"query {w.name} has no trace")
        await run_in_threadpool(hub.trace, w.name, None)
        return Response(status_code=204)

    async def stream_stats(request: Request) -> Response:
        return JSONResponse(hub.stream_stats())

    async def openapi(request: Request) -> Response:
        return JSONResponse(schema())

    async def health(request: Request) -> Response:
        return JSONResponse(hub.health())

    async def list_queries(request: Request) -> Response:
        return JSONResponse([_describe(w) for w in hub.all()])

    async def register(request: Request) -> Response:
        body = (await read_body(request, guard.max_query_bytes, guard.body_timeout,
                                "the query")).decode("utf-8", errors="replace")
        opts = {k: request.query_params.get(k) or None for k in ("name", "dialect", "output", "format")}
        flag = request.query_params.get("traceable", "false")
        if flag not in ("true", "false"):
            return _error(400, f"traceable={flag[:40]!r}: expected true or false")
        traceable = flag == "true"
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                d = json.loads(body)
                if not isinstance(d, dict) or not isinstance(d.get("query"), str):
                    raise ValueError('a JSON body must be {"query": TEXT, "name"?, "dialect"?, '
                                     '"output"?, "format"?, "traceable"?}')
            except (ValueError, RecursionError) as e:  # (json: nesting thousands deep)
                return _error(400, str(e))
            body = d["query"]
            if not isinstance(d.get("traceable", traceable), bool):
                return _error(400, 'the JSON body\'s "traceable" is true or false')
            traceable = d.get("traceable", traceable)
            opts = {k: d.get(k) or v for k, v in opts.items()}
            if not all(v is None or isinstance(v, str) for v in opts.values()):
                return _error(400, 'the JSON body\'s "name", "dialect", "output" and "format" '
                                   "are strings")
        try:
            w = await run_in_threadpool(hub.register, body, name=opts["name"], dialect=opts["dialect"],
                                        output=opts["output"], fmt=opts["format"] or "jsonl",
                                        traceable=traceable)
        except DuplicateName as e:
            return _error(409, str(e))
        except (QueryError, EngineError, ValueError) as e:
            return _error(400, str(e))
        except RecursionError:  # the parser's, on brackets nested thousands deep
            return _error(400, "the query nests too deeply to be parsed")
        except OSError as e:  # the output's broker
            return _error(502, str(e))
        return JSONResponse(_describe(w), status_code=201)

    def _worker(request: Request) -> QueryWorker | None:
        return hub.get(request.path_params["name"])

    async def get_query(request: Request) -> Response:
        w = _worker(request)
        return JSONResponse(_describe(w)) if w else _error(404, "no such query")

    async def unregister(request: Request) -> Response:
        if not hub.unregister(request.path_params["name"]):
            return _error(404, "no such query")
        return Response(status_code=204)

    async def automaton(request: Request) -> Response:
        w = _worker(request)
        if w is None:
            return _error(404, "no such query")
        if not isinstance(w.query, SpaseqQuery):
            return _error(400, f"query {w.name} is not a SPASEQ query: it has no automaton")
        dot = to_dot(w.query)
        if request.query_params.get("format", "svg") == "dot":
            return Response(dot, media_type="text/vnd.graphviz")
        exe = shutil.which("dot")
        if exe is None:
            return _error(503, "Graphviz's dot is not installed (make system-deps installs it); "
                               "?format=dot gives the DOT text")
        proc = await run_in_threadpool(subprocess.run, [exe, "-Tsvg"], input=dot.encode(),
                                       capture_output=True, timeout=30)
        if proc.returncode:
            return _error(500, proc.stderr.decode(errors="replace"))
        return Response(proc.stdout, media_type="image/svg+xml")

    def _since(request: Request) -> int:
        return _seq(request.headers.get("last-event-id") or request.query_params.get("since"))

    async def _items(w: QueryWorker, since: int) -> AsyncIterator[Item | None]:
        """The query's items after ``since``, then live ones (None: nothing for a while);
        ends with SHUTDOWN when the server stops, LAGGED (its ``seq`` the last item
        yielded) when the subscriber has not taken ``history`` items: a client that reads
        slower than the query writes would hold them all, the client can resume from there
        while they are in the history (SSE's Last-Event-ID, the WebSocket's ?since=)."""
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Item] = asyncio.Queue()
        cap = hub.settings.history
        lagging = False

        def offer(item: Item) -> None:
            nonlocal lagging
            if lagging:
                return
            if inbox.qsize() >= cap:
                lagging = True
                inbox.put_nowait(LAGGED)
            else:
                inbox.put_nowait(item)

        def deliver(item: Item) -> None:
            loop.call_soon_threadsafe(offer, item)

        last = since
        streams.add(inbox)
        backlog = w.channel.subscribe(deliver, since)
        try:
            for it in backlog:
                yield it
                last = it.seq
                if it.kind == "end":
                    return
            while True:
                try:
                    it = await asyncio.wait_for(inbox.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield None
                    continue
                if it is LAGGED:
                    yield LAGGED._replace(seq=last)
                    return
                yield it
                if it.kind in ("end", "shutdown"):
                    return
                last = it.seq
        finally:
            streams.discard(inbox)
            w.channel.unsubscribe(deliver)

    def end_streams() -> None:
        for q in list(streams):
            q.put_nowait(SHUTDOWN)

    def _format(w: QueryWorker, fmt: str | None, accept: str | None,
                offered: tuple[str, ...] = tuple(FORMATS)) -> str:
        """The negotiated result format; ValueError (406) when the query cannot have it."""
        out = result_format(fmt, accept, offered)
        if out != "jsonl" and not graph_results(w.query):
            raise ValueError(f"query {w.name} gives bindings, not triples: its results are "
                             f"pushed as jsonl objects; {out} needs a CONSTRUCT or DESCRIBE "
                             "query (or an EP-SPARQL CONSTRUCT rule)")
        return out

    async def sse(request: Request) -> Response:
        w = _worker(request)
        if w is None:
            return _error(404, "no such query")
        try:
            fmt = _format(w, request.query_params.get("format"), request.headers.get("accept"),
                          TEXT_FORMATS)
        except ValueError as e:
            return _error(406, str(e))
        if fmt == "jelly":
            return _error(406, "Jelly is binary and Server-Sent Events carry text: take Jelly "
                               "from the WebSocket (one binary message per RDF Message) or an "
                               "MQTT output, or rdfm-trig / rdfm-nquads here")
        renderer = Renderer(fmt)

        async def events() -> AsyncIterator[str]:
            async for it in _items(w, _since(request)):
                if it is None:
                    yield ": keep-alive\n\n"
                elif it.kind == "shutdown":
                    return
                elif it.kind == "lagged":
                    # a comment, no event: EventSource reconnects with the last id it had
                    yield f": behind by {hub.settings.history} results: resume after id {it.seq}\n\n"
                    return
                elif it.kind != "result":
                    yield f"event: {it.kind}\nid: {it.seq}\ndata: {json.dumps(it.data, ensure_ascii=False)}\n\n"
                else:
                    for text in renderer.render(it):
                        assert isinstance(text, str)  # (Jelly is refused above)
                        data = "".join(f"data: {x}\n" for x in text.rstrip("\n").split("\n"))
                        yield f"event: {event}\nid: {it.seq}\n{data}\n"

        event = "result" if fmt == "jsonl" else MESSAGE_EVENT
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                   "X-Result-Format": FORMATS[fmt]}
        if fmt in MESSAGE_TYPES:
            headers[MESSAGE_TYPE_HEADER] = MESSAGE_TYPES[fmt]
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def ws(websocket: WebSocket) -> None:
        w = hub.get(websocket.path_params["name"])
        if w is None:
            await websocket.close(code=1008, reason="no such query")
            return
        try:
            subprotocol, asked = negotiate_subprotocol(
                websocket.headers.get("sec-websocket-protocol"), websocket.query_params.get("format"))
            fmt = _format(w, asked, websocket.headers.get("accept"))
        except ValueError as e:
            # refused before the upgrade, with the reason (the ASGI denial response)
            await websocket.send_denial_response(_error(406, str(e)))
            return
        renderer = Renderer(fmt)
        await websocket.accept(subprotocol=subprotocol)
        try:
            async for it in _items(w, _seq(websocket.query_params.get("since"))):
                if it is None:
                    continue
                if it.kind == "end":
                    break
                if it.kind == "shutdown":
                    await websocket.close(code=1001, reason="the server is stopping")
                    return
                if it.kind == "lagged":
                    await websocket.close(code=1013, reason=f"behind by {hub.settings.history} "
                                          f"results: reconnect with ?since={it.seq}")
                    return
                if it.kind == "error":
                    await websocket.send_text(json.dumps(it.data, ensure_ascii=False))
                    continue
                for msg in renderer.render(it):
                    if isinstance(msg, bytes):
                        await websocket.send_bytes(msg)  # a Jelly frame
                    else:
                        await websocket.send_text(msg)
            await websocket.close(code=1000)
        except WebSocketDisconnect:
            pass  # the client left: nothing more to send

    async def post_events(request: Request) -> Response:
        stream = request.query_params.get("stream")
        if not stream:
            return _error(400, "give the stream's IRI: POST /events?stream=IRI")
        try:
            fmt = body_format(request.headers.get("content-type"),
                              request.query_params.get("format"))
        except ValueError as e:
            return _error(415, str(e))
        if busy := hub.busy():  # (before the body is read: the client may keep it)
            return _error(429, f"query {busy.name} has {busy.pending} events still to take in "
                               f"(--max-pending-events {hub.settings.max_pending}): send them "
                               "again later", {"Retry-After": "1"})
        body = await read_body(request, guard.max_event_bytes, guard.body_timeout, "the events")
        try:
            posted = await run_in_threadpool(hub.post_events, stream, body, fmt)
        except Busy as e:
            return _error(429, str(e), {"Retry-After": "1"})
        except MemoryError as e:  # pyoxigraph's parser: one record past its 16 MiB buffer
            return _error(413, f"a record is larger than the parser takes ({e}); none of "
                               "the body's events were taken in")
        if posted.rejected and not posted.accepted and posted.rejected >= posted.records:
            # nothing of the body was taken: a client reading only the status must not
            # believe its events are in (the reasons are in the dead letter)
            return _error(422, f"all {posted.records} record(s) of the body were rejected "
                               "(their reasons: GET /deadletters); none was taken in")
        return JSONResponse({"accepted": posted.accepted, "rejected": posted.rejected},
                            status_code=202)

    async def list_streams(request: Request) -> Response:
        return JSONResponse([src.describe() for src in hub.sources.values()])

    async def attach(request: Request) -> Response:
        try:
            d = json.loads(await read_body(request, CONTROL_BYTES, guard.body_timeout,
                                           "the source") or b"{}")
            if not (isinstance(d, dict) and isinstance(d.get("iri"), str)
                    and isinstance(d.get("url"), str)):
                raise ValueError('the body must be {"iri": STREAM, "url": "tcp://HOST:PORT" or '
                                 '"mqtt://HOST:PORT/TOPIC", "format"?: "events" | "rdfm" | "jelly"}')
            src = await run_in_threadpool(hub.attach, d["iri"], d["url"],
                                          d.get("format") or "events")
        except ConnectionError as e:
            return _error(502, str(e))
        except (ValueError, RecursionError) as e:  # (json: nesting thousands deep)
            return _error(400, str(e))
        return JSONResponse(src.describe(), status_code=201)

    async def detach(request: Request) -> Response:
        iri = request.query_params.get("iri")
        if not iri:
            return _error(400, "give the stream's IRI: DELETE /streams?iri=IRI")
        src = await run_in_threadpool(hub.detach, iri)
        return JSONResponse(src.describe()) if src else _error(404, "no source attached to <" + iri + ">")

    async def put_graph(request: Request) -> Response:
        """PUT replaces the graph; POST merges RDF into it, or applies a SPARQL Update
        (application/sparql-update), as the SPARQL 1.1 Graph Store and Update protocols."""
        iri = request.query_params.get("iri")
        if not iri:
            return _error(400, f"give the graph's IRI: {request.method} /graphs?iri=IRI "
                               "('default' for the default graph)")
        body = await read_body(request, guard.max_graph_bytes, guard.body_timeout, "the graph")
        ctype = request.headers.get("content-type")
        try:
            if request.method == "POST" and (ctype or "").split(";")[0].strip() == \
                    "application/sparql-update":
                text = body.decode("utf-8", "replace")
                # an update nested 20,000 deep killed the process in its parser (issue 52's
                # fuzz): no update needs more than this
                if nesting(text) > MAX_NESTING:
                    return _error(400, f"the update nests brackets more than {MAX_NESTING} deep")
                n, at = await run_in_threadpool(hub.update_graph, iri, text)
            else:
                n, at = await run_in_threadpool(
                    functools.partial(hub.put_graph, merge=request.method == "POST"),
                    iri, body, ctype)
        except ValueError as e:
            return _error(400, str(e))
        except RecursionError:  # an update's parser, on brackets nested thousands deep
            return _error(400, "the update nests too deeply to be parsed")
        return JSONResponse({"graph": iri, "triples": n, "time": at})

    async def clock(request: Request) -> Response:
        try:
            d = json.loads(await read_body(request, CONTROL_BYTES, guard.body_timeout,
                                           "the clock") or b"{}")
            until = d.get("until") if isinstance(d, dict) else None
            if not isinstance(until, int) or isinstance(until, bool):
                raise ValueError('the body must be {"until": TIME} with an integer time '
                                 "(timeline units: epoch ms for dateTime streams)")
            await run_in_threadpool(hub.advance, until)
        except (ValueError, RecursionError) as e:  # (json: nesting thousands deep)
            return _error(400, str(e))
        return JSONResponse(hub.health())

    async def dead_letters(request: Request) -> Response:
        return JSONResponse(hub.dead_letters())

    routes = [
        Route("/", console, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/queries", list_queries, methods=["GET"]),
        Route("/queries", register, methods=["POST"]),
        Route("/queries/{name}", get_query, methods=["GET"]),
        Route("/queries/{name}", unregister, methods=["DELETE"]),
        Route("/queries/{name}/results", sse, methods=["GET"]),
        Route("/queries/{name}/automaton", automaton, methods=["GET"]),
        Route("/queries/{name}/explain", explain_query, methods=["GET"]),
        Route("/queries/{name}/trace", get_trace, methods=["GET"]),
        Route("/queries/{name}/trace", put_trace, methods=["PUT"]),
        Route("/queries/{name}/trace", delete_trace, methods=["DELETE"]),
        Route("/console/{file}", console_file, methods=["GET"]),
        Route("/streams/stats", stream_stats, methods=["GET"]),
        WebSocketRoute("/queries/{name}/ws", ws),
        Route("/events", post_events, methods=["POST"]),
        Route("/streams", list_streams, methods=["GET"]),
        Route("/streams", attach, methods=["POST"]),
        Route("/streams", detach, methods=["DELETE"]),
        Route("/graphs", put_graph, methods=["PUT", "POST"]),
        Route("/clock", clock, methods=["POST"]),
        Route("/deadletters", dead_letters, methods=["GET"]),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        app.state.end_streams = lambda: loop.call_soon_threadsafe(end_streams)
        yield
        end_streams()
        hub.close()

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return _error(exc.status, exc.message, exc.headers)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(exc.status_code, exc.detail, dict(exc.headers or {}))

    async def internal(request: Request, exc: Exception) -> Response:
        # the traceback goes to the server's log (uvicorn logs it), never to the client
        return _error(500, f"internal error ({type(exc).__name__}); the server's log has "
                           "the details")

    middleware = [Middleware(Guard, protection=guard, bodies=BODIES)]
    if token:
        middleware.append(Middleware(BearerAuth, token=token))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={Refused: refused, HTTPException: http_error,
                                        Exception: internal})
    app.state.end_streams = lambda: None
    return app
