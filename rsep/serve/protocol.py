"""uvicorn's HTTP/1.1 protocol with the deadlines it lacks (a module of its own: uvicorn is
imported only by a server that starts, not by ``rsep serve --help``)."""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from rsep.serve.guard import error_body, log


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with the deadlines it lacks: a request's headers must
    all arrive within ``header_timeout`` of its first byte (of the connection, for a first
    request), or it gets a 408 and the connection is closed; a body still coming
    ``body_timeout`` after its headers (a second more than :func:`read_body` gives the
    route, so that a route's 408 goes out first) closes the connection. uvicorn holds a
    connection that dribbles its headers forever, and one that sends nothing too."""

    header_timeout = 10.0
    body_timeout = 60.0

    _timer: asyncio.TimerHandle | None = None
    _phase: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers", self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded: a WebSocket now
            self._disarm()
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._arm("body", self.body_timeout + 1)
        elif state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm("headers", self.header_timeout)  # a request begun, not all its headers
        elif state is not h11.IDLE:
            self._disarm()

    def _arm(self, phase: str, seconds: float) -> None:
        if self._phase == phase:
            return
        self._disarm()
        self._phase = phase
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._phase = None, None

    def _expired(self) -> None:
        phase, self._timer, self._phase = self._phase, None, None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        if phase == "headers" and self.conn.their_state is h11.IDLE and (
                self.cycle is None or self.cycle.response_complete):
            body = error_body(f"the request's headers did not arrive within "
                              f"{self.header_timeout:g} s (--header-timeout)")
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json"
                                 b"\r\nconnection: close\r\ncontent-length: "
                                 + str(len(body)).encode() + b"\r\n\r\n" + body)
        elif phase == "body" and self.conn.their_state is not h11.SEND_BODY:
            return
        log.info("closing a connection whose request did not arrive in time (%s)", phase)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's says so in text/plain; every refusal of this server is one JSON line
        event = h11.Response(status_code=400, headers=[(b"content-type", b"application/json"),
                                                       (b"connection", b"close")],
                             reason=b"Bad Request")
        self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.Data(data=error_body(f"{msg} (malformed HTTP)"))))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()
