"""``ragsift serve``'s app and server in this process, on a free loopback port, around a compressor
that fails on purpose: a plugin that raises (even ``SystemExit``) costs its request a 500 that
says "internal error" and a request id, never the service; the token is checked before the body
is read; malformed bodies, unknown routes and wrong methods get the error shape; slow headers and
bodies are cut off; the answer's size is limited; the config's path is not shown."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import httpx
import pytest

from ragsift.config import load_config
from ragsift.service.app import create_app
from ragsift.service.schema import ServiceLimits
from ragsift.service.server import BODY_GRACE_S, make_server
from ragsift.types import CompressionResult, Example

TOKEN = "test-token-51c2"  # a test value, not a secret
PLUGIN_TEXT = "plugin detail 9c1f"  # what a failing plugin says: must reach the log, never the client
SOURCE = "/home/someone/private/configs/bm25.toml"
HEADER_TIMEOUT = BODY_TIMEOUT = 0.5
LIMITS = ServiceLimits(max_request_bytes=300_000, max_response_bytes=20_000, body_timeout_s=BODY_TIMEOUT)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GOOD = {"question": "Who wrote Hamlet?", "documents": ["Hamlet is a tragedy. William Shakespeare wrote it."]}


class Faulty:
    """bm25, except for the questions that make it fail."""

    def __init__(self) -> None:
        (self.inner,) = load_config("bm25").build_compressors().values()

    def compress_many(self, examples: Iterable[Example]) -> Iterator[CompressionResult]:
        examples = list(examples)
        for example in examples:
            if example.question == "exit":
                raise SystemExit(3)
            if example.question == "interrupt":
                raise KeyboardInterrupt
            if example.question == "boom":
                raise RuntimeError(PLUGIN_TEXT)
        return self.inner.compress_many(examples)


@contextmanager
def running() -> Iterator[str]:
    app = create_app(cast(Any, Faulty()), "bm25", limits=LIMITS, token=TOKEN, source=SOURCE)
    server = make_server(app, header_timeout=HEADER_TIMEOUT, body_timeout=BODY_TIMEOUT, log_level="warning")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)  # polling for readiness, not a fixed wait
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with running() as url:
        yield url


@pytest.fixture()
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers=AUTH, timeout=30) as c:
        yield c


def _raw(base_url: str, data: bytes, wait_s: float = 10) -> bytes:
    """Send ``data`` on a fresh connection, then read what comes back until the server closes it
    (or ``wait_s`` passes: then what came so far)."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait_s) as s:
        s.sendall(data)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except TimeoutError:
            pass
    return got


def _one_answer(s: socket.socket) -> bytes:
    """One whole answer (headers and Content-Length bytes of body) from the connection."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += s.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.mark.parametrize("question", ["exit", "interrupt", "boom"])
def test_a_failing_plugin_gets_internal_error_and_the_service_stays_up(
        client: httpx.Client, question: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="ragsift.service"):
        answer = client.post("/compress", json={**GOOD, "question": question})
    assert answer.status_code == 500, answer.text
    error = answer.json()
    request_id = error["request_id"]
    assert error["error"].startswith(f"internal error (request id {request_id})")
    assert answer.headers["x-request-id"] == request_id
    assert PLUGIN_TEXT not in answer.text and "SystemExit" not in answer.text and "Traceback" not in answer.text
    logged = caplog.text
    assert request_id in logged and ({"exit": "SystemExit", "interrupt": "KeyboardInterrupt", "boom": PLUGIN_TEXT}[question]
                                     in logged)
    # the next request is served as usual
    after = client.post("/compress", json=GOOD)
    assert after.status_code == 200 and after.json()["results"][0]["kept"]


def test_a_failing_request_in_a_batch_does_not_fail_the_others(client: httpx.Client) -> None:
    answer = client.post("/compress", json={"examples": [GOOD, {**GOOD, "question": "exit"}]})
    assert answer.status_code == 500  # the request holding the failing example
    assert client.post("/compress", json={"examples": [GOOD, GOOD]}).status_code == 200


def test_the_token_is_checked_before_the_body_is_read(base_url: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        answer = httpx.post(f"{base_url}/compress", content=b'{"question": ', headers=headers, timeout=30)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        assert answer.json() == {"error": "missing or wrong bearer token: this service needs 'Authorization: Bearer TOKEN'."}
    # a body announced but never sent: answered at once, not after the body's time limit; the
    # connection is closed when the body's time is up
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        started = time.monotonic()
        s.sendall(b"POST /compress HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 150000\r\n\r\n")
        assert _one_answer(s).startswith(b"HTTP/1.1 401 ") and time.monotonic() - started < BODY_TIMEOUT
        while s.recv(65536):
            pass
        assert time.monotonic() - started < BODY_TIMEOUT + BODY_GRACE_S + 3


def _body(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


@pytest.mark.parametrize(("body", "needle"), [
    (b'{"question": "q\xff\xfe", "documents": ["a."]}', "not UTF-8 text (byte 0xff at byte 15)"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"question": "q", "documents": ["a."], "answers": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"question": "q", "documents": ["a."], "id": ' + "7" * 5000 + "}", "a number with more than 4300 digits"),
    ('{"question": "q", "documents": ["a."], "id": ' + "7" * 4000 + "}", "body.id: Input should be a valid string"),
    ('{"question": "q\\ud800", "documents": ["a."]}', "body.question: Input should be a valid string, unable to parse"),
    ('{"question": "q", "documents": [{"text": "a.", "score": NaN}]}', "body.documents[0].score: Input should be a finite number"),
    ('{"question": "q", "documents": [{"text": "a.", "score": Infinity}]}', "body.documents[0].score"),
    ("", "body: Field required"),
    ("[]", "body: Input should be a valid dictionary"),
])
def test_malformed_bodies_get_422_with_an_error(client: httpx.Client, body: str | bytes, needle: str) -> None:
    answer = client.post("/compress", content=_body(body), headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error.startswith("malformed request: ") and needle in error, error


def test_unknown_routes_and_wrong_methods_get_the_error_shape(client: httpx.Client) -> None:
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and missing.json() == {
        "error": "no such route: GET /nowhere; this service has POST /compress, POST /rerank, GET /plugins, GET /health, "
                 "GET /metrics, GET /docs."}
    wrong = client.get("/compress")
    assert wrong.status_code == 405 and wrong.json() == {"error": "method not allowed: GET /compress; use POST."}
    assert wrong.headers["allow"] == "POST"


def test_slow_headers_are_cut_off(base_url: str) -> None:
    started = time.monotonic()
    got = _raw(base_url, b"POST /compress HTTP/1.1\r\nHost: x\r\n", wait_s=10)  # and then nothing
    assert got.startswith(b"HTTP/1.1 408 ") and b"--header-timeout" in got
    assert time.monotonic() - started < 5
    # a connection that sends nothing at all is closed too
    assert _raw(base_url, b"", wait_s=10).startswith(b"HTTP/1.1 408 ")


def test_slow_headers_on_a_kept_alive_connection_are_cut_off(base_url: str) -> None:
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_answer(s).startswith(b"HTTP/1.1 200 ")
        s.sendall(b"GET /health HTTP/1.1\r\n")  # the next request's headers, never finished
        started, got = time.monotonic(), b""
        while chunk := s.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < 5


def test_a_slow_body_is_cut_off(base_url: str) -> None:
    started = time.monotonic()
    got = _raw(base_url, f"POST /compress HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                         "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"question\": ".encode(), wait_s=10)
    assert got.startswith(b"HTTP/1.1 408 ") and b"--body-timeout" in got and b"connection: close" in got.lower()
    assert time.monotonic() - started < 5


def test_an_answer_over_the_limit_gets_413(client: httpx.Client) -> None:
    many = {"question": "Who wrote Hamlet?", "documents": [" ".join(f"Sentence {i} is here." for i in range(400))]}
    answer = client.post("/compress", json=many)
    assert answer.status_code == 413, answer.text
    error = answer.json()["error"]
    assert error.startswith("answer too large: ") and "at most 20000 bytes" in error and "--max-response-bytes" in error
    assert client.post("/compress", json=GOOD).status_code == 200


def test_the_config_path_is_not_shown(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert health["config"] == "bm25.toml"
    assert health["limits"]["max_response_bytes"] == 20_000 and health["limits"]["body_timeout_s"] == BODY_TIMEOUT
    description = client.get("/openapi.json").json()["info"]["description"]
    assert "bm25.toml" in description and "/home/someone" not in description
    assert "/home/someone" not in json.dumps(client.get("/openapi.json").json())


def test_a_422_echoes_the_body_bounded(client: httpx.Client) -> None:
    """Issue 53 row 9: the places of a 422 echo the body's keys; a 250 KB key, or 20,000 unknown
    keys, get an answer of a few KB, not one larger than the body."""
    huge_key = "k" * 250_000
    many = {f"x{i}": 0 for i in range(20_000)}
    for extra, problems in (({huge_key: 1}, 1), (many, 20_000)):
        body = json.dumps({**GOOD, **extra})
        answer = client.post("/compress", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 422, answer.text[:300]
        assert len(answer.content) < 10_000, len(answer.content)
        shown = answer.json()
        assert len(shown["problems"]) == min(problems, 20)
        assert all(len(p["place"]) < 300 and len(p["problem"]) < 300 for p in shown["problems"])
        assert "Extra inputs are not permitted" in shown["error"]
    assert "(and 19990 more)" in shown["error"] and "body.x0:" in shown["error"]
    assert shown["problems"][0]["place"] == "body.x0"
