"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for reader tests (no network).

Each request takes the next status from ``script`` (the last one repeats); 200 answers with a
chat completion whose content is produced by ``answer(body)``. Besides HTTP statuses a script
may hold the misbehaviours of a broken server: ``"malformed"`` (200 with truncated JSON),
``"text"`` (200 with an HTML page), ``"empty"`` (200 with no choices) and ``"hang"`` (no answer
for ``hang_seconds``). ``chaos(rng, weights)`` makes a script picker that draws each request's
behaviour at random instead.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "fake_openai_server", "chaos"]

#: every way the chaos picker can misbehave, besides a good answer (200)
MISBEHAVIOURS: tuple[int | str, ...] = (500, 503, 429, "malformed", "text", "empty", "hang")


def chaos(seed: int, failure_rate: float = 0.4, hang_rate: float = 0.05) -> Callable[[], int | str]:
    """A picker: a good answer with probability 1 - ``failure_rate``, else one misbehaviour at
    random (a hang with probability ``hang_rate``). Every misbehaviour shows up early: until each
    has been served once, half the requests take the next one of them (in a seeded order)."""
    rng = random.Random(seed)
    others = [m for m in MISBEHAVIOURS if m != "hang"]
    pending = list(MISBEHAVIOURS)
    rng.shuffle(pending)

    def pick() -> int | str:
        if pending and rng.random() < 0.5:
            return pending.pop()
        draw = rng.random()
        if draw < hang_rate:
            return "hang"
        if draw < failure_rate:
            return rng.choice(others)
        return 200

    return pick


class FakeOpenAIServer:
    def __init__(self, script: list[int | str], answer: Callable[[dict[str, Any]], str] | None = None,
                 hold_until_in_flight: int = 0, block_after: int | None = None, count_words: bool = False,
                 pick: Callable[[], int | str] | None = None, hang_seconds: float = 5.0,
                 api_key_echo: bool = False, retry_after_ms: int | None = 5) -> None:
        #: the retry-after-ms header of each 5xx and 429 answer (None: none, the SDK's own backoff)
        self.retry_after_ms = retry_after_ms
        #: draws each request's behaviour (instead of ``script``) when given
        self.pick = pick
        self.hang_seconds = hang_seconds
        #: error bodies repeat the Authorization header, as some misconfigured proxies do
        self.api_key_echo = api_key_echo
        self.behaviours: list[int | str] = []
        self.block_after = block_after
        #: report the prompt's whitespace-separated words as its prompt tokens (else always 11)
        self.count_words = count_words
        #: requests after the first ``block_after`` wait until this is set (or 60 s pass)
        self.release = threading.Event()
        self.script = list(script) or [200]
        self.answer = answer or (lambda body: "Paris")
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold_until_in_flight = hold_until_in_flight
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        if not self.count_words:
            return 11
        return sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))

    def next_status(self) -> int | str:
        with self._lock:
            if self.pick is not None:
                status = self.pick()
            else:
                status = self.script.pop(0) if len(self.script) > 1 else self.script[0]
            self.behaviours.append(status)
            return status

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    if server.in_flight >= server.hold_until_in_flight:
                        server._released.set()
                    number = len(server.requests)
                try:
                    if server.block_after is not None and number > server.block_after:
                        server.release.wait(timeout=60)
                    if server.hold_until_in_flight:
                        server._released.wait(timeout=5)
                    status = server.next_status()
                    tokens = server.prompt_tokens(body)
                    completion = {
                        "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                        "choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": 2, "total_tokens": tokens + 2},
                    }
                    if status == "hang":
                        time.sleep(server.hang_seconds)
                        return
                    if status == "malformed":
                        self._send(200, json.dumps(completion).encode()[:25])
                    elif status == "text":
                        self._send(200, b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
                    elif status == "empty":
                        self._send(200, completion)
                    elif status == 200:
                        completion["choices"] = [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": server.answer(body)}}]
                        self._send(200, completion)
                    elif status == 400:
                        self._send(400, {"error": {"message": "Requested tokens (5000) exceed context window of 4096",
                                                   "type": "invalid_request_error"}})
                    else:
                        assert isinstance(status, int), status
                        # the openai SDK waits as a server says: a short wait keeps the tests fast
                        headers = {"retry-after-ms": str(server.retry_after_ms)} if server.retry_after_ms is not None else {}
                        message = f"scripted failure {status}"
                        if server.api_key_echo:
                            message += f" (request had Authorization: {self.headers.get('Authorization')})"
                        self._send(status, {"error": {"message": message}}, headers)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler


@contextmanager
def fake_openai_server(script: list[int | str], answer: Callable[[dict[str, Any]], str] | None = None,
                       hold_until_in_flight: int = 0, block_after: int | None = None,
                       count_words: bool = False, pick: Callable[[], int | str] | None = None,
                       hang_seconds: float = 5.0, api_key_echo: bool = False,
                       retry_after_ms: int | None = 5) -> Iterator[FakeOpenAIServer]:
    """Serve on a free loopback port for the duration of the block."""
    fake = FakeOpenAIServer(script, answer, hold_until_in_flight, block_after, count_words, pick, hang_seconds,
                            api_key_echo, retry_after_ms)
    fake.httpd = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=fake.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        fake.httpd.shutdown()
        fake.httpd.server_close()
        thread.join(timeout=5)
