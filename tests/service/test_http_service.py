"""``ragsift serve`` over real HTTP: the command line starts uvicorn on a free loopback port and
the tests talk to it with httpx (answers, equality with ``ragsift compress``, limits, malformed
requests, the bearer token, a bounded load test, and a bounded fuzz test)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragsift.datasets import load_examples

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("serve_load", ROOT / "benchmarks" / "serve_load.py")
assert _spec is not None and _spec.loader is not None
serve_load = importlib.util.module_from_spec(_spec)
sys.modules["serve_load"] = serve_load  # dataclasses look their module up there
_spec.loader.exec_module(serve_load)

TOKEN = "test-token-7f3a"  # a test value, not a secret
N_EXAMPLES = 12
LIMITS = ["--max-request-bytes", "120000", "--max-examples", "8", "--max-documents", "12", "--max-batch-examples", "16",
          "--max-wait-ms", "20"]


@pytest.fixture(scope="module")
def examples() -> list[Any]:
    return list(load_examples(None, limit=N_EXAMPLES))


@pytest.fixture(scope="module")
def compressed() -> list[dict[str, Any]]:
    """What ``ragsift compress --config bm25`` writes for the first examples of the bundled sample."""
    return serve_load.compress_records("bm25", N_EXAMPLES)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serve_load.serve("bm25", log, LIMITS, env={"RAGSIFT_SERVE_TOKEN": TOKEN}) as running:
        yield running
    assert TOKEN not in log.read_text()  # the token is never logged


@pytest.fixture(scope="module")
def client(service: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as c:
        yield c


def _strip(record: dict[str, Any]) -> dict[str, Any]:
    return serve_load.comparable_record(record)


def test_binds_to_loopback_and_reports_health(service: Any) -> None:
    assert service.base_url.startswith("http://127.0.0.1:")
    health = httpx.get(f"{service.base_url}/health", timeout=30).json()  # no token needed for probes
    assert health["status"] == "ok" and health["compressor"] == "bm25" and health["token_required"] is True
    assert health["config"] == "bm25.toml"  # its name, not where it lives
    assert health["limits"] == {"max_request_bytes": 120000, "max_examples": 8, "max_documents": 12,
                                "max_characters": 1_000_000, "max_response_bytes": 64 * 1024 * 1024,
                                "body_timeout_s": 60.0}
    assert health["queue"]["max_batch_examples"] == 16


def test_one_example(client: httpx.Client) -> None:
    body = {"question": "Who wrote Hamlet?",
            "documents": ["Hamlet is a tragedy. William Shakespeare wrote it around 1600.",
                          {"title": "Cats", "text": "Cats purr. They sleep a lot.", "id": "c1"}]}
    answer = client.post("/compress", json=body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["compressor"] == "bm25" and data["batch"]["examples"] >= 1
    (result,) = data["results"]
    assert result["id"] == "0" and result["document_ids"] == ["0", "c1"]
    texts = [s["text"] for s in result["sentences"]]
    assert texts == ["Hamlet is a tragedy.", "William Shakespeare wrote it around 1600.", "Cats purr.", "They sleep a lot."]
    for s in result["sentences"]:  # spans point into the documents sent
        doc = body["documents"][s["doc"]]
        assert (doc if isinstance(doc, str) else doc["text"])[s["start"]:s["end"]] == s["text"]
    scores = [s["score"] for s in result["sentences"]]
    assert min(scores[:2]) > 0 and scores[2:] == [0.0, 0.0]  # no question word in the cat sentences
    assert result["kept"] == [s["id"] for s in sorted(result["sentences"], key=lambda s: s["rank"])]  # top-5 keeps all 4
    assert result["compressed_text"] == "Hamlet is a tragedy. William Shakespeare wrote it around 1600.\n\nCats purr. They sleep a lot."
    assert set(result["timings"]) == {"split", "score", "select", "assemble"}


def test_several_examples_equal_ragsift_compress(client: httpx.Client, examples: list[Any], compressed: list[dict[str, Any]]) -> None:
    bodies = [serve_load.request_body(e) for e in examples[:3]]
    answer = client.post("/compress", json={"examples": bodies})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [r["id"] for r in results] == [e.id for e in examples[:3]]
    assert [_strip(r) for r in results] == [_strip(r) for r in compressed[:3]]
    assert [r["document_ids"] for r in results] == [[d.id for d in e.documents] for e in examples[:3]]
    # the same examples one request each: the same records
    for example, want in zip(examples[3:6], compressed[3:6], strict=True):
        one = client.post("/compress", json=serve_load.request_body(example))
        assert one.status_code == 200 and [_strip(r) for r in one.json()["results"]] == [_strip(want)]


def test_too_large_requests_get_413_saying_what(client: httpx.Client, examples: list[Any]) -> None:
    big = {"question": "q", "documents": ["word " * 30000]}  # 150 kB > 120000
    answer = client.post("/compress", json=big)
    assert answer.status_code == 413 and "120000 bytes" in answer.json()["error"] and "--max-request-bytes" in answer.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams in
        yield b'{"question": "q", "documents": ["'
        for _ in range(200):
            yield b"x" * 1000
        yield b'"]}'

    streamed = client.post("/compress", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413 and "more than 120000 bytes" in streamed.json()["error"]

    many = client.post("/compress", json={"examples": [{"question": "q", "documents": ["a."]}] * 9})
    assert many.status_code == 413 and "9 in one request" in many.json()["error"] and "--max-examples" in many.json()["error"]
    docs = client.post("/compress", json={"examples": [{"question": "q", "documents": ["a."]},
                                                       {"question": "q", "documents": ["a."] * 13}]})
    assert docs.status_code == 413 and "examples[1] has 13" in docs.json()["error"] and "--max-documents" in docs.json()["error"]


@pytest.mark.parametrize(("body", "needles"), [
    ('{"question": "q", "documents": ["a."]', ["not valid JSON"]),
    ({"question": "q"}, ["missing 'documents'"]),
    ({"question": "q", "documents": [{"txt": "a"}]}, ["body.documents[0].text: Field required", "txt: Extra inputs"]),
    ({"examples": [{"question": "q", "documents": [7]}]}, ["body.examples[0].documents[0]", "a document is its text"]),
    ({"question": "", "documents": ["a."]}, ["body.question"]),
    ({"question": "q", "documents": ["a."], "examples": []}, ["not both"]),
    ({"question": "q", "documents": [{"text": "ab", "sentence_spans": [[0, 5]]}]}, ["[0, 5) is not inside the text"]),
])
def test_malformed_requests_get_422_saying_where(client: httpx.Client, body: Any, needles: list[str]) -> None:
    if isinstance(body, str):
        answer = client.post("/compress", content=body, headers={"Content-Type": "application/json"})
    else:
        answer = client.post("/compress", json=body)
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]
    assert message.startswith("malformed request: ")
    for needle in needles:
        assert needle in message


def test_form_encoded_body_is_told_to_send_json(client: httpx.Client) -> None:
    answer = client.post("/compress", content=b"question=q", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 422 and "Content-Type: application/json" in answer.json()["error"]


def test_the_token_is_required(service: Any) -> None:
    body = {"question": "q", "documents": ["a."]}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        answer = httpx.post(f"{service.base_url}/compress", json=body, headers=headers, timeout=60)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in answer.text
    assert httpx.get(f"{service.base_url}/plugins", timeout=60).status_code == 401


def test_plugins_and_openapi(client: httpx.Client) -> None:
    plugins = client.get("/plugins").json()
    assert "bm25" in [p["name"] for p in plugins["scorer"]] and "remote-yes-no" in [p["name"] for p in plugins["scorer"]]
    schema = client.get("/openapi.json").json()
    assert "/compress" in schema["paths"] and "CompressRequest" in json.dumps(schema["components"])


def test_bounded_load_no_error_no_lost_or_mixed_answer(service: Any, examples: list[Any], compressed: list[dict[str, Any]]) -> None:
    n = 300
    bodies = [serve_load.request_body(examples[i % len(examples)], id=f"load-{i}") for i in range(n)]
    expected = [compressed[i % len(compressed)] for i in range(n)]
    report = serve_load.run_load(service.base_url, bodies, concurrency=n, token=TOKEN, total_timeout_s=300)
    assert serve_load.check_answers(report, bodies, expected) == []
    assert report.max_in_flight == n
    queue = httpx.get(f"{service.base_url}/health", timeout=30).json()["queue"]
    assert 1 < queue["largest_batch"] <= 16  # requests that arrived together were compressed together
    assert queue["waiting_requests"] == 0
    print(f"load: {n} requests, {n} in flight, {report.seconds:.2f} s, {report.per_second:.1f} requests/s")


FUZZ_REQUESTS = 400
FUZZ_SECONDS = 120
_KEYS = ["question", "documents", "examples", "id", "answers", "text", "title", "score", "sentence_spans", "extra"]
_ATOMS: list[Any] = [None, True, False, 0, -1, 2**70, 1e308, -0.0, "", "a.", "Who?", "\u0000\n\t", "\ud7ff\u00e9\u4e2d",
                     "x" * 300, "Hamlet is a play. Shakespeare wrote it."]


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 5 or roll < 0.4:
        return rng.choice(_ATOMS)
    if roll < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEYS): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def _fuzz_body(rng: random.Random, valid: list[bytes]) -> bytes:
    """A random body: a valid one truncated, altered byte by byte, or with a random value in place of
    one of its fields; random JSON; random bytes; or nesting far too deep."""
    base = rng.choice(valid)
    kind = rng.randrange(8)
    if kind == 0:
        return base[: rng.randrange(len(base))]
    if kind == 1:
        data = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data[at] = rng.randrange(256)
            elif op == 1:
                data.insert(at, rng.choice(b'{}[]",:\\0123456789-eE.tfn \xff\xc3'))
            else:
                del data[at]
        return bytes(data)
    if kind == 2:
        body = json.loads(base)
        target = body if rng.random() < 0.5 else body["documents"][rng.randrange(len(body["documents"]))]
        if isinstance(target, dict):
            target[rng.choice(_KEYS)] = _random_json(rng)
        return json.dumps(body).encode()
    if kind == 3:
        return json.dumps(_random_json(rng)).encode()
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
    if kind == 6:  # the schema's shape, odd texts (control characters, any script, empty, long)
        def text() -> str:
            return "".join(chr(rng.choice([rng.randrange(32), rng.randrange(32, 127), rng.randrange(0x80, 0xD800),
                                           rng.randrange(0xE000, 0x110000)])) for _ in range(rng.choice([0, 1, 5, 40, 400])))
        return json.dumps({"question": text() or "?", "documents": [text() if rng.random() < 0.5 else {"text": text(), "title": text()}
                                                                   for _ in range(rng.randrange(1, 5))]}).encode()
    if kind == 5:
        depth = rng.choice([1000, 5000, 100_000])
        return b'{"question": "q", "documents": ' + b"[" * depth + b"]" * depth + b"}"
    return b'{"question": "q", "documents": ["a."], "id": ' + b"9" * rng.choice([4000, 4301, 5000]) + b"}"


def test_fuzzed_bodies_get_only_documented_answers_and_never_stop_the_service(service: Any, examples: list[Any]) -> None:
    """Random and truncated bodies (bounded in count and time, to this machine only): every answer
    is 200, 401, 413 or 422 with an ``error``, and the service keeps answering."""
    rng = random.Random(24)  # seeded: the same requests on every run
    valid = [json.dumps(serve_load.request_body(e)).encode() for e in examples[:4]]
    valid.append(json.dumps({"question": "Who wrote Hamlet?", "documents": ["Hamlet is a play.", {"text": "Cats purr."}]}).encode())
    media = ["application/json", "application/json", "application/json", "text/plain", "application/x-www-form-urlencoded", None]
    seen: dict[int, int] = {}
    started = time.monotonic()
    with httpx.Client(base_url=service.base_url, timeout=60) as client:
        for i in range(FUZZ_REQUESTS):
            if time.monotonic() - started > FUZZ_SECONDS:
                break
            body = _fuzz_body(rng, valid)
            headers = {} if rng.random() < 0.1 else {"Authorization": f"Bearer {TOKEN}"}
            if (content_type := rng.choice(media)) is not None:
                headers["Content-Type"] = content_type
            answer = client.post("/compress", content=body, headers=headers)
            seen[answer.status_code] = seen.get(answer.status_code, 0) + 1
            assert answer.status_code in {200, 401, 413, 422}, f"request {i}: {answer.status_code} {answer.text[:500]} for {body[:300]!r}"
            if answer.status_code != 200:
                assert isinstance(answer.json()["error"], str)
            if "Authorization" not in headers:
                assert answer.status_code == 401
            if i % 50 == 0:
                assert client.get("/health").status_code == 200
    assert sum(seen.values()) >= 100, seen  # enough of them ran in the time allowed
    assert seen.get(422, 0) > 0 and seen.get(401, 0) > 0, seen
    assert service.process.poll() is None and httpx.get(f"{service.base_url}/health", timeout=30).json()["status"] == "ok"
    print(f"fuzz: {sum(seen.values())} requests in {time.monotonic() - started:.1f} s: {dict(sorted(seen.items()))}")
