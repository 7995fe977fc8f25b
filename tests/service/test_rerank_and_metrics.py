"""``POST /rerank`` answers the request bodies stock rerank clients send (Cohere v1 and v2, Jina,
TEI) with the documents best first, each scored by its best sentence and pruned to its kept
sentences; ``GET /metrics`` is Prometheus text whose counts and histograms match the requests
made. In-process (FastAPI's TestClient), no port."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

import ragsift  # noqa: E402
from ragsift.service.app import create_app  # noqa: E402
from ragsift.service.schema import ServiceLimits  # noqa: E402

TOKEN = "test-token-rerank"  # a test value, not a secret
QUERY = "Who wrote Hamlet?"
DOCS = ["Cats purr. They sleep a lot.",
        "Hamlet is a tragedy. William Shakespeare wrote Hamlet around 1600. It is set in Denmark.",
        "Paris is large. Hamlet was performed in Paris."]


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = create_app(ragsift.load_compressor("bm25", selector={"k": 2}), "bm25", limits=ServiceLimits(max_documents=5))
    with TestClient(app) as c:  # the lifespan starts the batch queue
        yield c


def _compressed(client: TestClient, documents: list[str]) -> dict[str, Any]:
    answer = client.post("/compress", json={"question": QUERY, "documents": documents})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["results"][0]
    return result


def _expected(record: dict[str, Any], n: int) -> tuple[list[float], list[str]]:
    """Each document's best sentence score and its kept sentences, from /compress's record."""
    best = [max((s["score"] for s in record["sentences"] if s["doc"] == d), default=0.0) for d in range(n)]
    kept = [" ".join(s["text"] for s in record["sentences"] if s["doc"] == d and s["kept"]) for d in range(n)]
    return best, kept


def test_cohere_v1_body_gets_the_best_documents_first_scored_by_their_best_sentence_and_pruned(client: TestClient) -> None:
    # what cohere.Client().rerank(model=..., query=..., documents=[...], top_n=2, return_documents=True) posts
    body = {"model": "rerank-english-v3.0", "query": QUERY, "documents": DOCS, "top_n": 2, "return_documents": True,
            "max_chunks_per_doc": 10}
    answer = client.post("/rerank", json=body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["model"] == "bm25" and isinstance(data["id"], str)
    best, kept = _expected(_compressed(client, DOCS), len(DOCS))
    order = sorted(range(len(DOCS)), key=lambda d: (-best[d], d))
    assert [r["index"] for r in data["results"]] == order[:2]
    assert data["results"][0]["index"] == 1  # the Hamlet document
    for r in data["results"]:
        assert r["relevance_score"] == pytest.approx(best[r["index"]])
        assert r["document"] == {"text": kept[r["index"]]}
    # pruned: k = 2 keeps two sentences in all, so some document lost text
    assert data["results"][0]["document"]["text"] == "Hamlet is a tragedy. William Shakespeare wrote Hamlet around 1600."


def test_cohere_v2_and_jina_bodies(client: TestClient) -> None:
    # Cohere v2 (ClientV2().rerank): strings only, max_tokens_per_doc; no return_documents: the text comes back
    v2 = client.post("/rerank", json={"model": "rerank-v3.5", "query": QUERY, "documents": DOCS, "top_n": 3,
                                      "max_tokens_per_doc": 4096})
    assert v2.status_code == 200, v2.text
    results = v2.json()["results"]
    assert len(results) == 3 and all("text" in r["document"] for r in results)
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    # Jina: documents as {"text": ...} objects, return_documents false: no document in the answer
    jina = client.post("/rerank", json={"model": "jina-reranker-v2-base-multilingual", "query": QUERY,
                                        "documents": [{"text": d} for d in DOCS], "top_n": 1, "return_documents": False})
    assert jina.status_code == 200, jina.text
    assert [set(r) for r in jina.json()["results"]] == [{"index", "relevance_score"}]
    assert jina.json()["results"][0]["index"] == 1


def test_tei_body_gets_a_bare_list_best_first(client: TestClient) -> None:
    # what TEI's clients (huggingface_hub's InferenceClient, Haystack's and LangChain's TEI rankers) post
    body = {"query": QUERY, "texts": DOCS, "raw_scores": False, "return_text": True, "truncate": False,
            "truncation_direction": "Right"}
    answer = client.post("/rerank", json=body)
    assert answer.status_code == 200, answer.text
    ranks = answer.json()
    assert isinstance(ranks, list) and sorted(r["index"] for r in ranks) == [0, 1, 2]
    best, kept = _expected(_compressed(client, DOCS), len(DOCS))
    assert [r["index"] for r in ranks] == sorted(range(len(DOCS)), key=lambda d: (-best[d], d))
    assert all(r["score"] == pytest.approx(best[r["index"]]) and r["text"] == kept[r["index"]] for r in ranks)
    plain = client.post("/rerank", json={"query": QUERY, "texts": DOCS}).json()
    assert all(set(r) == {"index", "score"} for r in plain)  # return_text defaults to false, as in TEI


def test_a_document_without_sentences_ranks_last(client: TestClient) -> None:
    answer = client.post("/rerank", json={"query": QUERY, "documents": ["", DOCS[1], DOCS[0]]})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results[-1]["index"] == 0 and results[-1]["document"] == {"text": ""}
    assert results[-1]["relevance_score"] == min(r["relevance_score"] for r in results)


@pytest.mark.parametrize(("body", "says"), [
    ({"query": QUERY, "documents": DOCS, "texts": DOCS}, "not both"),
    ({"query": QUERY}, "one of them"),
    ({"query": QUERY, "documents": DOCS, "return_text": True}, "use 'return_documents'"),
    ({"query": QUERY, "texts": DOCS, "top_n": 1}, "'top_n' belongs to Cohere's"),
    ({"query": QUERY, "documents": [{"text": "a", "url": "x"}]}, "url"),
    ({"query": "", "documents": DOCS}, "query"),
    ({"query": QUERY, "documents": DOCS, "top_n": 0}, "top_n"),
])
def test_malformed_rerank_requests_are_422_saying_why(client: TestClient, body: dict[str, Any], says: str) -> None:
    answer = client.post("/rerank", json=body)
    assert answer.status_code == 422 and says in answer.json()["error"], answer.text


def test_rerank_is_bounded_and_needs_the_token() -> None:
    app = create_app(ragsift.load_compressor("bm25"), "bm25", token=TOKEN, limits=ServiceLimits(max_documents=2))
    with TestClient(app) as c:
        assert c.post("/rerank", json={"query": QUERY, "documents": DOCS[:1]}).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        too_many = c.post("/rerank", json={"query": QUERY, "texts": DOCS}, headers=auth)
        assert too_many.status_code == 413 and "--max-documents" in too_many.json()["error"]
        assert c.post("/rerank", json={"query": QUERY, "texts": DOCS[:2]}, headers=auth).status_code == 200
        assert c.get("/metrics").status_code == 200  # open, as /health is


# -- /metrics -------------------------------------------------------------------------------------
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _parse(text: str) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    """Prometheus text format 0.0.4: the TYPE of each family and every sample; any other line fails."""
    types: dict[str, str] = {}
    samples = []
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line.startswith("# HELP "):
            continue
        else:
            match = _SAMPLE.match(line)
            assert match, f"not a Prometheus sample line: {line!r}"
            labels = dict(_LABEL.findall(match.group(2) or ""))
            samples.append((match.group(1), labels, float(match.group(3))))
    return types, samples


def test_metrics_count_requests_by_endpoint_and_status_with_a_latency_histogram() -> None:
    app = create_app(ragsift.load_compressor("bm25"), "bm25", token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app) as c:
        for _ in range(3):
            assert c.post("/compress", json={"question": QUERY, "documents": DOCS}, headers=auth).status_code == 200
        assert c.post("/rerank", json={"query": QUERY, "texts": DOCS}, headers=auth).status_code == 200
        assert c.post("/rerank", json={"query": QUERY}, headers=auth).status_code == 422
        assert c.post("/rerank", json={"query": QUERY, "texts": DOCS}).status_code == 401  # refused before the app: counted
        assert c.get("/no/such/path/a1").status_code == 404
        assert c.get("/no/such/path/b2").status_code == 404
        assert c.get("/health").status_code == 200
        scrape = c.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
    types, samples = _parse(scrape.text)
    assert types == {"ragsift_http_requests_total": "counter", "ragsift_http_request_duration_seconds": "histogram"}
    counts = {(s[1]["endpoint"], s[1]["method"], s[1]["status"]): s[2] for s in samples if s[0] == "ragsift_http_requests_total"}
    assert counts == {("/compress", "POST", "200"): 3, ("/rerank", "POST", "200"): 1, ("/rerank", "POST", "422"): 1,
                      ("/rerank", "POST", "401"): 1, ("other", "GET", "404"): 2, ("/health", "GET", "200"): 1}
    # the histogram of each endpoint: cumulative buckets, +Inf = _count = its requests, a positive _sum
    for endpoint, method in {(e, m) for e, m, _ in counts}:
        labels = {"endpoint": endpoint, "method": method}
        buckets = [(float(s[1]["le"]), s[2]) for s in samples
                   if s[0] == "ragsift_http_request_duration_seconds_bucket" and {k: s[1][k] for k in labels} == labels]
        assert buckets and buckets[-1][0] == float("inf")
        assert [le for le, _ in buckets] == sorted(le for le, _ in buckets)
        assert [n for _, n in buckets] == sorted(n for _, n in buckets)  # cumulative
        (count,) = [s[2] for s in samples if s[0] == "ragsift_http_request_duration_seconds_count" and s[1] == labels]
        (total,) = [s[2] for s in samples if s[0] == "ragsift_http_request_duration_seconds_sum" and s[1] == labels]
        assert buckets[-1][1] == count == sum(n for (e, m, _), n in counts.items() if (e, m) == (endpoint, method))
        assert total > 0
    assert not any("/no/such" in s[1].get("endpoint", "") for s in samples)  # one label for every unknown path
