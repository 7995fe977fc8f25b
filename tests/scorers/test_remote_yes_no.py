"""The ``remote-yes-no`` scorer against a scripted completions server on 127.0.0.1: the score
from the two logprobs, the rule for a missing token, retries, the key and the URL from the
environment. (Against the real llama.cpp server: tests/scorers/test_remote_yes_no_llamacpp.py.)"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.lm import EXIT_TEMPLATE
from ragsift.registry import build_plugin, get_registry
from ragsift.scorers.remote_yes_no import RemoteScoringError, RemoteYesNoScorer, yes_no_score
from ragsift.types import Document, Example, Sentence

Reply = Callable[[dict[str, Any]], tuple[int, Any]]


class FakeCompletions:
    """``/v1/models`` lists ``models``; ``/v1/completions`` answers ``reply(body)`` -> (status, JSON)."""

    def __init__(self, reply: Reply, models: tuple[str, ...] = ("fake-model",)) -> None:
        self.reply, self.models = reply, models
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.httpd: ThreadingHTTPServer | None = None
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload = fake.reply(body)
                self._send(status, payload)

        return Handler


@contextmanager
def fake_server(reply: Reply, models: tuple[str, ...] = ("fake-model",)) -> Iterator[FakeCompletions]:
    fake = FakeCompletions(reply, models)
    fake.httpd = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=fake.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.httpd.shutdown()
        fake.httpd.server_close()
        thread.join(timeout=5)


def completion(top: dict[str, float]) -> dict[str, Any]:
    first = max(top, key=lambda k: top[k]) if top else ""
    return {"id": "c", "object": "text_completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "text": first, "finish_reason": "length",
                         "logprobs": {"tokens": [first], "token_logprobs": [top.get(first)], "text_offset": [0],
                                      "top_logprobs": [top]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}


def example() -> tuple[Example, list[Sentence]]:
    docs = (Document(title="Paris", text="Paris is the capital of France. It is large."),
            Document(title="Cats", text="Cats purr."))
    sentences = [Sentence(0, 0, 0, 31, "Paris is the capital of France."), Sentence(0, 1, 32, 44, "It is large."),
                 Sentence(1, 0, 0, 10, "Cats purr.")]
    return Example(id="ex1", question="What is the capital of France?", answers=("Paris",), documents=docs), sentences


def by_sentence(table: dict[str, dict[str, float]]) -> Reply:
    """Answer each prompt by the sentence it ends with."""
    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        for sentence, top in table.items():
            if f"Sentence:\n{sentence}\n" in body["prompt"]:
                return 200, completion(top)
        return 404, {"error": {"message": "unknown sentence"}}
    return reply


def scorer(url: str, **params: Any) -> RemoteYesNoScorer:
    return RemoteYesNoScorer(base_url=url, backoff_seconds=0.01, **params)


TOPS = {
    "Paris is the capital of France.": {"Yes": -0.1, "No": -2.5, "The": -4.0},
    "It is large.": {"No": -0.3, "Yes": -1.6, "It": -3.0},
    "Cats purr.": {"No": -0.05, "Not": -3.5, "Yes": -6.0},
}


def test_registered_buildable_without_a_server_and_config_says_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGSIFT_YES_NO_URL", raising=False)
    built = get_registry().create("scorer", "remote-yes-no", {})
    assert isinstance(built, RemoteYesNoScorer) and built.score_range() == (0.0, 1.0)
    assert built.config()["template"] == EXIT_TEMPLATE and built.config()["missing"] == "error"
    ex, _ = example()
    assert built.score(ex, []).shape == (0,)  # nothing to score: no server needed
    with pytest.raises(ConfigError, match="RAGSIFT_YES_NO_URL"):
        built.warm_up()


@pytest.mark.parametrize(("params", "needle"), [
    ({"top_logprobs": 0}, "top_logprobs"), ({"missing": "guess"}, "missing"),
    ({"template": "no placeholders"}, "{query}"), ({"max_concurrency": 0}, "max_concurrency"),
])
def test_bad_params_are_refused(params: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=re_escape(needle)):
        build_plugin("scorer", {"name": "remote-yes-no", **params})


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_scores_are_the_two_way_softmax_of_the_returned_logprobs() -> None:
    ex, sentences = example()
    with fake_server(by_sentence(TOPS)) as fake:
        remote = scorer(fake.base_url, top_logprobs=3, max_concurrency=3)
        scores = remote.score(ex, sentences)
    expected = [math.exp(t["Yes"]) / (math.exp(t["Yes"]) + math.exp(t["No"])) for t in TOPS.values()]
    assert scores == pytest.approx(expected, abs=1e-12)
    body = fake.requests[0]
    assert body["model"] == "fake-model" and body["max_tokens"] == 1 and body["temperature"] == 0 and body["logprobs"] == 3
    prompts = sorted(r["prompt"] for r in fake.requests)
    want = sorted(remote.template.render(ex.question, f"{d.title}\n{d.text}", s.text)
                  for s in sentences for d in [ex.documents[s.doc_index]])
    assert prompts == want  # the sentence's OWN document, EXIT's template
    assert remote.stats["prompts"] == 3 and remote.stats["requests"] == 3 and remote.stats["floored"] == 0


def test_yes_no_score_is_stable_at_the_extremes() -> None:
    assert yes_no_score(0.0, -2000.0) == 1.0 and yes_no_score(-2000.0, 0.0) == 0.0
    assert yes_no_score(-0.7, -0.7) == 0.5


def test_a_missing_token_is_an_error_by_default() -> None:
    ex, sentences = example()
    tops = {**TOPS, "Cats purr.": {"No": -0.05, "Not": -3.5, "The": -5.0}}
    with fake_server(by_sentence(tops)) as fake, pytest.raises(RemoteScoringError) as info:
        scorer(fake.base_url, top_logprobs=3).score(ex, sentences)
    message = str(info.value)
    assert "example 'ex1', sentence 1:0" in message and "'Yes' is not among the top 3" in message
    assert "top_logprobs" in message and 'missing = "floor"' in message and "'No' -0.050" in message


def test_floor_bounds_the_missing_token_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    ex, sentences = example()
    tops = {"Paris is the capital of France.": {"Yes": -0.1, "The": -3.0, "A": -4.0},  # No missing: lower bound
            "It is large.": {"No": -0.3, "Yes": -1.6, "It": -3.0},
            "Cats purr.": {"No": -0.05, "Not": -3.5, "The": -5.0, "Sampled": -9.0}}  # Yes missing: upper bound
    with fake_server(by_sentence(tops)) as fake:
        remote = scorer(fake.base_url, top_logprobs=3, missing="floor")
        with caplog.at_level("WARNING", logger="ragsift.scorers.remote_yes_no"):
            scores = remote.score(ex, sentences)
    # the 3rd largest returned logprob bounds every token outside the top 3 (not the extra sampled one)
    assert scores[0] == pytest.approx(yes_no_score(-0.1, -4.0)) and scores[2] == pytest.approx(yes_no_score(-5.0, -0.05))
    assert scores[1] == pytest.approx(yes_no_score(-1.6, -0.3))
    assert remote.stats["floored"] == 2 and remote.stats["lower_bounds"] == 1 and remote.stats["upper_bounds"] == 1
    warnings = [r.getMessage() for r in caplog.records]
    assert any("sentence 0:0" in w and "a lower bound" in w for w in warnings)
    assert any("sentence 1:0" in w and "an upper bound" in w for w in warnings)


def test_both_missing_is_always_an_error() -> None:
    ex, sentences = example()
    tops = {**TOPS, "It is large.": {"It": -0.2, "The": -1.0}}
    with fake_server(by_sentence(tops)) as fake, pytest.raises(RemoteScoringError, match="no bound"):
        scorer(fake.base_url, top_logprobs=2, missing="floor").score(ex, sentences)


def test_retries_server_errors_and_bad_replies_then_scores() -> None:
    ex, sentences = example()
    script = iter([(503, {"error": {"message": "busy"}}), (200, b"{not json"), (200, {"choices": []})])

    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        return next(script, None) or by_sentence(TOPS)(body)

    with fake_server(reply) as fake:
        remote = scorer(fake.base_url, max_concurrency=1, max_retries=3)
        scores = remote.score(ex, sentences[:1])
    assert scores[0] == pytest.approx(yes_no_score(-0.1, -2.5))
    assert remote.stats["requests"] == 4 and remote.stats["retries"] == 3


def test_gives_up_with_a_clear_error_and_refuses_what_retrying_cannot_fix() -> None:
    ex, sentences = example()
    with fake_server(lambda body: (500, {"error": {"message": "boom"}})) as fake, pytest.raises(RemoteScoringError) as info:
        scorer(fake.base_url, max_retries=2).score(ex, sentences[:1])
    assert "failed 3 time(s)" in str(info.value) and "boom" in str(info.value)
    too_long = {"error": {"message": "Requested tokens (5000) exceed context window of 4096"}}
    with fake_server(lambda body: (400, too_long)) as fake, pytest.raises(PromptTooLongError, match="Nothing is cut"):
        scorer(fake.base_url).score(ex, sentences[:1])
    with fake_server(lambda body: (401, {"error": {"message": "bad key"}})) as fake, pytest.raises(RemoteScoringError) as info:
        scorer(fake.base_url, api_key_env="RAGSIFT_TEST_REMOTE_KEY").score(ex, sentences[:1])
    assert "HTTP 401" in str(info.value) and "$RAGSIFT_TEST_REMOTE_KEY" in str(info.value) and len(fake.requests) == 1
    no_logprobs = completion({})
    no_logprobs["choices"][0]["logprobs"] = None
    with fake_server(lambda body: (200, no_logprobs)) as fake, pytest.raises(RemoteScoringError, match="no next-token logprobs"):
        scorer(fake.base_url).score(ex, sentences[:1])


def test_url_and_key_come_from_the_environment_and_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    ex, sentences = example()
    secret = "sk-test-remote-0123456789"

    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        return 500, {"error": {"message": f"echoing Authorization: Bearer {secret}"}}

    with fake_server(by_sentence(TOPS), models=("only-one",)) as fake:
        monkeypatch.setenv("RAGSIFT_YES_NO_URL", fake.base_url)
        monkeypatch.setenv("RAGSIFT_YES_NO_API_KEY", secret)
        remote = RemoteYesNoScorer()
        assert remote.score(ex, sentences[:1])[0] == pytest.approx(yes_no_score(-0.1, -2.5))
        assert fake.requests[0]["model"] == "only-one"  # the server's only model
        assert fake.headers[0]["authorization"] == f"Bearer {secret}"
        assert remote.config()["base_url"] == fake.base_url  # manifests and cache keys name the server
        assert secret not in json.dumps(remote.config()) and secret not in repr(remote)
    with fake_server(reply) as fake:
        monkeypatch.setenv("RAGSIFT_YES_NO_URL", fake.base_url)
        with pytest.raises(RemoteScoringError) as info:
            RemoteYesNoScorer(max_retries=0).score(ex, sentences[:1])
    assert secret not in str(info.value) and "***" in str(info.value)


def test_a_server_with_several_models_needs_model_name() -> None:
    ex, sentences = example()
    with fake_server(by_sentence(TOPS), models=("a", "b")) as fake:
        with pytest.raises(ConfigError, match="serves 2 models"):
            scorer(fake.base_url).score(ex, sentences[:1])
        assert scorer(fake.base_url, model_name="b").score(ex, sentences[:1]).shape == (1,)
        assert fake.requests[-1]["model"] == "b"


def test_credentials_in_the_url_are_redacted() -> None:
    remote = RemoteYesNoScorer(base_url="http://user:pw@host:8000/v1")
    assert remote.server == "http://host:8000/v1" and "pw" not in repr(remote)
