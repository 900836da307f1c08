"""The OpenAPI 3.1 description of ``rsep serve``'s API, served at /openapi.json.
tests/serve/test_serve.py checks it against the routes of :func:`rsep.serve.app.build_app` and
against the OpenAPI schema, so it cannot drift from what the server does."""

from __future__ import annotations

from typing import Any

from rsep import __version__


def _json(ref: str, description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


_ERROR = _json("Error", "the error, e.g. a query's located message")
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
_TEXT = {"schema": {"type": "string"}}
_FORMAT = {"name": "format", "in": "query", "description": "jsonl (default), or RDF Messages "
           "for CONSTRUCT / DESCRIBE queries and EP-SPARQL rules (406 for the others); jelly "
           "over WebSocket only (binary messages; 406 on SSE)",
           "schema": {"enum": ["jsonl", "rdfm-trig", "rdfm-nquads", "jelly"]}}
_ACCEPT = {"name": "Accept", "in": "header", "description": "without ?format: application/trig "
           "or application/n-quads (version=1.2-messages), or application/x-jelly-rdf, ask for RDF "
           "Messages", "schema": {"type": "string"}}
_OUTPUT = {"type": "string", "description": "mqtt://HOST:PORT/TOPIC: each result item "
           "published as one MQTT message (QoS 1), as rsep run --output does"}
_OUTPUT_FORMAT = {"enum": ["jsonl", "rdfm-trig", "rdfm-nquads", "jelly"],
                  "description": "the output's items: jsonl objects (default), or one RDF "
                                 "Message per evaluation (CONSTRUCT / DESCRIBE queries and "
                                 "EP-SPARQL rules; Jelly: one RdfStreamFrame)"}

_GRAPH_IRI = [{"name": "iri", "in": "query", "required": True, "description": "the graph's IRI "
               "('default': the default graph)", "schema": {"type": "string"}}]
_GRAPH_CHANGED = {"description": "the graph's size after the change, and the engine time it "
                  "applies from (null before any event: from the start)", "content": {
                      "application/json": {"schema": {"type": "object", "properties": {
                          "graph": {"type": "string"}, "triples": {"type": "integer"},
                          "time": {"type": ["integer", "null"]}}}}}}


# what every route may answer before it runs (rsep.serve.guard), and what a route with a body
# may answer about it
_GUARD = {"403": _json("Error", "the request's Origin is not the server's own nor given "
                                "with --allow-origin"),
          "421": _json("Error", "the request's Host is a name other than localhost, not "
                                "given with --allow-host")}
_BODY = {"408": _json("Error", "the body did not arrive within --body-timeout"),
         "413": _json("Error", "the body is larger than the route's limit (--max-*-bytes)"),
         "415": _json("Error", "the Content-Type is not one of the route's")}
_BUSY = {"429": {**_json("Error", "a query has --max-pending-events events still to take "
                                  "in: none of the body was taken in, send it again later"),
                 "headers": {"Retry-After": {"schema": {"type": "integer"}}}}}


def schema() -> dict[str, Any]:
    doc = _schema()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method == "parameters":  # (the path's, not an operation)
                continue
            op["responses"].update(_GUARD)
            if method in ("post", "put") and "requestBody" in op:
                op["responses"].update(_BODY)
            if (path, method) == ("/events", "post"):
                op["responses"].update(_BUSY)
    return doc


def _schema() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "rsep serve", "version": __version__,
                 "description": "A running rsep engine: continuous queries registered while "
                                "streams run, results pushed as Server-Sent Events and "
                                "WebSocket messages (docs/serve.md)."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"],
                          "properties": {"error": {"type": "string"}}},
                "Trace": {"type": "object", "required": ["key", "limit", "dropped", "lines"],
                          "properties": {
                              "key": {"type": "string", "description": "?VAR=VALUE as PUT"},
                              "limit": {"type": "integer", "description": "the lines kept "
                                        "(--trace-lines): older ones are dropped"},
                              "dropped": {"type": "integer",
                                          "description": "lines dropped so far"},
                              "lines": {"type": "array", "items": {
                                  "type": "object", "required": ["seq", "time", "text"],
                                  "properties": {
                                      "seq": {"type": "integer",
                                              "description": "1, 2, ... in time order"},
                                      "time": {"type": ["integer", "string"],
                                               "description": "as a result's time"},
                                      "text": {"type": "string", "description": "the line "
                                               "rsep run --trace prints after the time"}}}}}},
                "Query": {"type": "object", "required": ["name", "kind", "status", "query"],
                          "properties": {
                              "name": {"type": "string"},
                              "kind": {"enum": ["rsp", "spaseq", "epsparql"]},
                              "status": {"enum": ["running", "failed"]},
                              "error": {"type": ["string", "null"]},
                              "events_in": {"type": "integer"},
                              "results_out": {"type": "integer"},
                              "state_triples": {"type": ["integer", "null"]},
                              "pending_events": {"type": "integer"},
                              "lag_ms": {"type": ["number", "null"]},
                              "engine_time": {"type": ["integer", "null"]},
                              "trace": {"type": ["string", "null"], "description": "the key "
                                        "of its trace (PUT /queries/N/trace), or null"},
                              "output": {"type": ["object", "null"], "properties": {
                                  "url": {"type": "string"}, "format": {"type": "string"},
                                  "published": {"type": "integer"},
                                  "error": {"type": ["string", "null"]}}},
                              "query": {"type": "string"}}},
                "Health": {"type": "object",
                           "properties": {"status": {"const": "ok"},
                                          "queries": {"type": "integer"},
                                          "events": {"type": "integer"},
                                          "dead_letters": {"type": "integer"},
                                          "engine_time": {"type": ["integer", "null"]},
                                          "uptime_s": {"type": "number"}}},
                "Result": {"type": "object", "description": "one line of `rsep run`'s jsonl "
                           "output for a run of several queries",
                           "required": ["query", "time"],
                           "properties": {"query": {"type": "string"},
                                          "time": {"type": ["integer", "string"]},
                                          "bindings": {"type": "object"},
                                          "triple": {"type": "string"},
                                          "boolean": {"type": "boolean"},
                                          "op": {"const": "delete"}}},
                "Source": {"type": "object",
                           "properties": {"iri": {"type": "string"}, "url": {"type": "string"},
                                          "format": {"enum": ["events", "rdfm", "jelly"]},
                                          "status": {"enum": ["running", "ended", "failed",
                                                              "detached"]},
                                          "error": {"type": ["string", "null"]},
                                          "events": {"type": "integer"},
                                          "rejected": {"type": "integer"}}},
                "DeadLetter": {"type": "object",
                               "properties": {k: {"type": t} for k, t in (
                                   ("stream", "string"), ("origin", "string"),
                                   ("line", "integer"), ("column", "integer"),
                                   ("reason", "string"), ("record", "string"),
                                   ("message", "string"))}},
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/": {"get": {"summary": "the web console",
                          "responses": {"200": {"description": "HTML",
                                                "content": {"text/html": _TEXT}}}}},
            "/openapi.json": {"get": {"summary": "this description",
                                      "responses": {"200": {"description": "OpenAPI 3.1"}}}},
            "/health": {"get": {"summary": "liveness and totals",
                                "responses": {"200": _json("Health", "the server's totals")}}},
            "/queries": {
                "get": {"summary": "the registered queries and their statistics",
                        "responses": {"200": {"description": "queries", "content": {
                            "application/json": {"schema": {"type": "array", "items": {
                                "$ref": "#/components/schemas/Query"}}}}}}},
                "post": {"summary": "register a query (any dialect); with an output, its "
                                    "results are also published to MQTT",
                         "parameters": [
                             {"name": "name", "in": "query", "schema": {"type": "string"}},
                             {"name": "dialect", "in": "query", "schema": {
                                 "enum": ["rspql", "csparql", "cqels", "spaseq", "epsparql"]}},
                             {"name": "output", "in": "query", "schema": _OUTPUT},
                             {"name": "format", "in": "query", "schema": _OUTPUT_FORMAT},
                             {"name": "traceable", "in": "query", "description": "a SPASEQ "
                              "query a trace may follow (PUT /queries/N/trace): it runs the "
                              "general engine, runs unshared", "schema": {
                                  "type": "string", "enum": ["true", "false"]}}],
                         "requestBody": {"required": True, "content": {
                             "application/sparql-query": _TEXT, "text/plain": _TEXT,
                             "application/json": {"schema": {
                                 "type": "object", "required": ["query"],
                                 "properties": {"query": {"type": "string"},
                                                "name": {"type": "string"},
                                                "dialect": {"type": "string"},
                                                "output": _OUTPUT,
                                                "format": _OUTPUT_FORMAT,
                                                "traceable": {"type": "boolean"}}}}}},
                         "responses": {"201": _json("Query", "registered"),
                                       "400": _ERROR,
                                       "409": _json("Error", "a query of that name is "
                                                             "registered already"),
                                       "502": _json("Error", "the output's broker cannot be "
                                                             "reached")}}},
            "/queries/{name}": {
                "parameters": [_NAME],
                "get": {"summary": "one query and its statistics",
                        "responses": {"200": _json("Query", "the query"), "404": _ERROR}},
                "delete": {"summary": "unregister a query (its result streams end)",
                           "responses": {"204": {"description": "unregistered"},
                                         "404": _ERROR}}},
            "/queries/{name}/results": {
                "parameters": [_NAME],
                "get": {"summary": "the query's results as Server-Sent Events: event "
                                   "'result' (data: a Result), or with format rdfm-* event "
                                   "'rdf-message', one RDF Message per evaluation, its media "
                                   "type in the header RDF-Message-Content-Type (jelly is "
                                   "refused with 406: SSE carries text), 'error' (the query failed), "
                                   "'end' (unregistered); ids count per query, Last-Event-ID "
                                   "or ?since=N resumes",
                        "parameters": [{"name": "since", "in": "query",
                                        "schema": {"type": "integer"}}, _FORMAT, _ACCEPT],
                        "responses": {"200": {"description": "an event stream",
                                              "content": {"text/event-stream": _TEXT}},
                                      "404": _ERROR, "406": _ERROR}}},
            "/queries/{name}/ws": {
                "parameters": [_NAME],
                "get": {"summary": "the query's results over WebSocket: one Result (or "
                                   "with format rdfm-* one RDF Message per evaluation; or "
                                   "{error}) per text message, with format jelly one binary "
                                   "message (an RdfStreamFrame, the first with the stream's "
                                   "options) per RDF Message; the format also negotiated "
                                   "by the subprotocol rdfm.trig, rdfm.n-quads or "
                                   "rdfm.x-jelly-rdf (Sec-WebSocket-Protocol); closed with "
                                   "1000 when the query is unregistered",
                        "parameters": [{"name": "since", "in": "query",
                                        "schema": {"type": "integer"}}, _FORMAT, _ACCEPT],
                        "responses": {"101": {"description": "switching protocols"},
                                      "404": _ERROR, "406": _ERROR}}},
            "/queries/{name}/automaton": {
                "parameters": [_NAME],
                "get": {"summary": "a SPASEQ query's automaton (rsep explain --format dot), "
                                   "as SVG drawn by Graphviz, or ?format=dot",
                        "parameters": [{"name": "format", "in": "query",
                                        "schema": {"enum": ["svg", "dot"]}}],
                        "responses": {"200": {"description": "the drawing", "content": {
                            "image/svg+xml": _TEXT, "text/vnd.graphviz": _TEXT}},
                            "400": _ERROR, "404": _ERROR, "503": _ERROR}}},
            "/console/{file}": {"get": {
                "summary": "the console's bundle (console.js, console.css; built by `make "
                           "console`, 404 when it is not)",
                "parameters": [{"name": "file", "in": "path", "required": True,
                                "schema": {"enum": ["console.js", "console.css"]}}],
                "responses": {"200": {"description": "the file", "content": {
                    "text/javascript": _TEXT, "text/css": _TEXT}}, "404": _ERROR}}},
            "/queries/{name}/explain": {
                "parameters": [_NAME],
                "get": {"summary": "what the engine runs for the query, as `rsep explain` "
                                   "prints it (an RSP query's model, a SPASEQ automaton's "
                                   "states, an EP-SPARQL operator tree)",
                        "responses": {"200": {"description": "the explanation", "content": {
                            "text/plain": _TEXT}}, "404": _ERROR, "400": _ERROR}}},
            "/queries/{name}/trace": {
                "parameters": [_NAME],
                "get": {"summary": "the lines of the query's trace (rsep run --trace), in time "
                                   "order, after ?since=SEQ (404: no trace started)",
                        "parameters": [{"name": "since", "in": "query",
                                        "schema": {"type": "integer"}}],
                        "responses": {"200": _json("Trace", "the trace"), "404": _ERROR}},
                "put": {"summary": "start a trace of a SPASEQ query's runs or an EP-SPARQL "
                                   "query's events of one key, from its next event on (a new "
                                   "trace replaces the last); refused (400) for other queries, "
                                   "as rsep run --trace is",
                        "requestBody": {"required": True, "content": {"application/json": {
                            "schema": {"type": "object", "required": ["key"], "properties": {
                                "key": {"type": "string", "description": "?VAR=VALUE: an "
                                        "<iri>, a prefixed name of the query's PREFIXes, or a "
                                        "literal's lexical form"}}}}}},
                        "responses": {"200": _json("Trace", "the new trace (no lines yet)"),
                                      "400": _ERROR, "404": _ERROR}},
                "delete": {"summary": "stop the trace and drop its lines",
                           "responses": {"204": {"description": "stopped"}, "404": _ERROR}}},
            "/streams/stats": {"get": {
                "summary": "per stream: events taken in and rejected, held back by the "
                           "allowed lateness, the latest event time, the rate over the last "
                           "10 s, the live source attached (the console's streams panel)",
                "responses": {"200": {"description": "streams", "content": {
                    "application/json": {"schema": {"type": "array", "items": {
                        "type": "object", "properties": {
                            "iri": {"type": "string"}, "accepted": {"type": "integer"},
                            "rejected": {"type": "integer"}, "held": {"type": "integer"},
                            "last_event_time": {"type": ["integer", "null"]},
                            "last_arrival_s_ago": {"type": ["number", "null"]},
                            "rate_per_s": {"type": "number"},
                            "allowed_lateness": {"type": "integer"},
                            "source": {"oneOf": [{"$ref": "#/components/schemas/Source"},
                                                 {"type": "null"}]}}}}}}}}}},
            "/events": {"post": {
                "summary": "events for a stream, as TriG, N-Quads or JSON lines, or an RDF "
                           "Message Log (TriG or N-Quads with MESSAGE delimiters: "
                           "'; version=1.2-messages', the December 2025 draft's '# @message' "
                           "form '; messages=rdfm', or ?format=rdfm|rdfm-trig|rdfm-nquads), or "
                           "Jelly (application/x-jelly-rdf or ?format=jelly: a delimited "
                           "stream of frames, or one frame; each frame one RDF Message)",
                "parameters": [{"name": "stream", "in": "query", "required": True,
                                "schema": {"type": "string"}},
                               {"name": "format", "in": "query",
                                "schema": {"enum": ["trig", "nquads", "jsonl", "rdfm",
                                                    "rdfm-trig", "rdfm-nquads", "jelly"]}}],
                "requestBody": {"required": True, "content": {
                    "application/trig": _TEXT, "application/n-quads": _TEXT,
                    "application/x-ndjson": _TEXT,
                    "application/trig; version=1.2-messages": _TEXT,
                    "application/n-quads; version=1.2-messages": _TEXT,
                    "application/trig; messages=rdfm": _TEXT,
                    "application/n-quads; messages=rdfm": _TEXT,
                    "application/x-jelly-rdf": {"schema": {"type": "string",
                                                           "contentMediaType": "application/x-jelly-rdf"}}}},
                "responses": {"202": {"description": "taken in; rejected records are in "
                                                     "the dead letter", "content": {
                    "application/json": {"schema": {"type": "object", "properties": {
                        "accepted": {"type": "integer"}, "rejected": {"type": "integer"}}}}}},
                    "400": _ERROR, "415": _ERROR,
                    "422": _json("Error", "every record of the body was rejected (see "
                                          "GET /deadletters): none was taken in")}}},
            "/streams": {
                "get": {"summary": "the live sources attached",
                        "responses": {"200": {"description": "sources", "content": {
                            "application/json": {"schema": {"type": "array", "items": {
                                "$ref": "#/components/schemas/Source"}}}}}}},
                "post": {"summary": "attach a live source (tcp://HOST:PORT, rsep connects and "
                                    "reads until the server closes; mqtt://HOST:PORT/TOPIC, "
                                    "rsep subscribes) to a stream: its events are taken in as "
                                    "POSTed ones; returns once connected",
                         "requestBody": {"required": True, "content": {"application/json": {
                             "schema": {"type": "object", "required": ["iri", "url"],
                                        "properties": {"iri": {"type": "string"},
                                                       "url": {"type": "string"},
                                                       "format": {"enum": ["events", "rdfm",
                                                                           "jelly"]}}}}}},
                         "responses": {"201": _json("Source", "attached"), "400": _ERROR,
                                       "502": _ERROR}},
                "delete": {"summary": "detach a stream's live source",
                           "parameters": [{"name": "iri", "in": "query", "required": True,
                                           "schema": {"type": "string"}}],
                           "responses": {"200": _json("Source", "detached"), "400": _ERROR,
                                         "404": _ERROR}}},
            "/graphs": {
                "put": {
                    "summary": "replace a background graph at the engine's current time: the "
                               "running queries read it from their next evaluation on, those "
                               "registered later from the start (000 Def. 2)",
                    "parameters": _GRAPH_IRI,
                    "requestBody": {"required": True, "content": {
                        "text/turtle": _TEXT, "application/n-triples": _TEXT}},
                    "responses": {"200": _GRAPH_CHANGED, "400": _ERROR}},
                "post": {
                    "summary": "change a background graph at the engine's current time: a "
                               "SPARQL 1.1 Update (application/sparql-update) applied to it as "
                               "the default graph, or RDF merged into it (Graph Store protocol)",
                    "parameters": _GRAPH_IRI,
                    "requestBody": {"required": True, "content": {
                        "application/sparql-update": _TEXT, "text/turtle": _TEXT,
                        "application/n-triples": _TEXT}},
                    "responses": {"200": _GRAPH_CHANGED, "400": _ERROR}}},
            "/clock": {"post": {
                "summary": "advance engine time: the evaluations due up to `until` are "
                           "carried out (as rsep run --until); later events must be after it",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"type": "object", "required": ["until"],
                               "properties": {"until": {"type": "integer"}}}}}},
                "responses": {"200": _json("Health", "the server's totals after it"),
                              "400": _ERROR}}},
            "/deadletters": {"get": {
                "summary": "the rejected records (the last 10,000)",
                "responses": {"200": {"description": "rejected records", "content": {
                    "application/json": {"schema": {"type": "array", "items": {
                        "$ref": "#/components/schemas/DeadLetter"}}}}}}}},
        },
    }
