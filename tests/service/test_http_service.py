"""``ragsift serve`` over real HTTP: the command line starts uvicorn on a free loopback port and
the tests talk to it with httpx (answers, equality with ``ragsift compress``, limits, malformed
requests, the bearer token, and a bounded load test)."""

from __future__ import annotations

import importlib.util
import json
import sys
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
    return serve_load.without_timings(record)


def test_binds_to_loopback_and_reports_health(service: Any) -> None:
    assert service.base_url.startswith("http://127.0.0.1:")
    health = httpx.get(f"{service.base_url}/health", timeout=30).json()  # no token needed for probes
    assert health["status"] == "ok" and health["compressor"] == "bm25" and health["token_required"] is True
    assert health["limits"] == {"max_request_bytes": 120000, "max_examples": 8, "max_documents": 12}
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
    assert result["id"] == "0"
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
