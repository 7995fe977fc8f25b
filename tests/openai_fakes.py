"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for reader tests (no network).

Each request takes the next status from ``script`` (the last one repeats); 200 answers with a
chat completion whose content is produced by ``answer(body)``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "fake_openai_server"]


class FakeOpenAIServer:
    def __init__(self, script: list[int], answer: Callable[[dict[str, Any]], str] | None = None,
                 hold_until_in_flight: int = 0, block_after: int | None = None, count_words: bool = False) -> None:
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

    def next_status(self) -> int:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
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
                    if status == 200:
                        content = server.answer(body)
                        self._send(200, {
                            "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": server.prompt_tokens(body), "completion_tokens": 2,
                                      "total_tokens": server.prompt_tokens(body) + 2},
                        })
                    elif status == 400:
                        self._send(400, {"error": {"message": "Requested tokens (5000) exceed context window of 4096",
                                                   "type": "invalid_request_error"}})
                    else:
                        headers = {"Retry-After": "0"} if status == 429 else {}
                        self._send(status, {"error": {"message": f"scripted failure {status}"}}, headers)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler


@contextmanager
def fake_openai_server(script: list[int], answer: Callable[[dict[str, Any]], str] | None = None,
                       hold_until_in_flight: int = 0, block_after: int | None = None,
                       count_words: bool = False) -> Iterator[FakeOpenAIServer]:
    """Serve on a free loopback port for the duration of the block."""
    fake = FakeOpenAIServer(script, answer, hold_until_in_flight, block_after, count_words)
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
