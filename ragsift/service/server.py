"""The HTTP protocol of ``ragsift serve``: uvicorn's h11 protocol with time limits on reading a request.

uvicorn times out idle keep-alive connections (``timeout_keep_alive``) but nothing else: a client
that opens a connection and sends its headers a byte at a time (slowloris) holds it forever.
Here a request's headers must arrive within ``header_timeout`` seconds of its first byte (of the
connection, for its first request); a slower client gets a 408 and its connection closed. The
body has ``body_timeout`` seconds from the end of the headers: the app answers a body it is
still waiting for with 408 (:class:`ragsift.service.app.BodyLimit`); a body still arriving a
moment later (after an answer that did not need it: a 401, a 413) has its connection closed.
Passed to uvicorn as its ``http`` protocol class (``uvicorn.Config(http=...)``) by
:func:`make_server`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["with_read_timeouts", "make_server"]

#: seconds past ``body_timeout`` before the connection of an unfinished body is closed (the app's 408 goes first)
BODY_GRACE_S = 1.0


class _TimedH11(H11Protocol):
    header_timeout: float = 10.0
    body_timeout: float = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None  # "headers", "body" or None (nothing: idle, or the request is in)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._wait_for(None)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        state = self.conn.their_state
        if state is h11.IDLE:
            if self.conn.trailing_data[0]:  # part of the next request's headers
                self._wait_for("headers")
        elif state is h11.SEND_BODY:
            self._wait_for("body")
        else:
            self._wait_for(None)

    def _wait_for(self, part: str | None) -> None:
        if part == self._waiting_for:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting_for = part
        if part is not None:
            seconds = self.header_timeout if part == "headers" else self.body_timeout + BODY_GRACE_S
            self._timer = self.loop.call_later(seconds, self._too_slow)

    def _too_slow(self) -> None:
        part, self._timer, self._waiting_for = self._waiting_for, None, None
        if self.transport.is_closing():
            return
        if part == "headers" and self.conn.their_state is h11.IDLE:
            # no request yet, so h11 cannot send a response: the whole answer, written as it is
            body = json.dumps({"error": f"request headers not received within {self.header_timeout:g} s "
                                        "(ragsift serve --header-timeout)."}).encode()
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                                 b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            self.transport.close()
        elif part == "body" and self.conn.their_state is h11.SEND_BODY:
            self.transport.close()


def with_read_timeouts(header_timeout: float, body_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, with a request's headers due within ``header_timeout`` seconds and
    its body within ``body_timeout`` more."""
    return type("H11WithReadTimeouts", (_TimedH11,), {"header_timeout": header_timeout, "body_timeout": body_timeout})


def make_server(app: Any, *, header_timeout: float = 10.0, body_timeout: float = 60.0, keep_alive: float = 30.0,
                log_level: str = "info") -> uvicorn.Server:
    """The uvicorn server of ``ragsift serve`` for ``app`` (``.run(sockets=[...])`` serves it)."""
    return uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=10,
                                         timeout_keep_alive=keep_alive,  # type: ignore[arg-type]  # seconds, a float works
                                         http=with_read_timeouts(header_timeout, body_timeout)))
