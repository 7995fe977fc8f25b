"""The OpenAI-compatible reader against a scripted loopback server: retries, errors, secrets."""

from __future__ import annotations

import time

import pytest
from openai_fakes import fake_openai_server

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.readers.base import ReaderError
from ragsift.readers.openai_reader import OpenAIReader, redact_url
from ragsift.readers.prompts import EXIT_READER_SYSTEM

SECRET = "sk-test-SECRET-do-not-log-7f3a"


def _reader(base_url: str, **params: object) -> OpenAIReader:
    defaults = {"base_url": base_url, "model": "fake", "api_key_env": "RAGSIFT_TEST_KEY", "backoff_seconds": 0.0}
    return OpenAIReader(**{**defaults, **params})


def test_answers_with_the_exit_prompt_and_sends_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIFT_TEST_KEY", SECRET)
    with fake_openai_server([200]) as server:
        reader = _reader(server.base_url, max_new_tokens=7, stop=["\n"])
        answer = reader.answer("What is the capital of France?", "Paris is the capital of France.")
    assert answer.text == "Paris"
    assert (answer.prompt_tokens, answer.completion_tokens) == (11, 2)
    body = server.requests[0]
    assert body["messages"][0] == {
        "role": "system",
        "content": EXIT_READER_SYSTEM.format(context="Paris is the capital of France."),
    }
    assert body["messages"][1] == {"role": "user", "content": "Query: What is the capital of France?\nAnswer:"}
    assert body["temperature"] == 0 and body["max_tokens"] == 7 and body["stop"] == ["\n"]
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    # the key is used but never shown
    for shown in (repr(reader), str(reader.config()), str(reader.describe())):
        assert SECRET not in shown
        assert "RAGSIFT_TEST_KEY" in shown or shown == repr(reader)


def test_retries_on_5xx_and_429_then_succeeds() -> None:
    with fake_openai_server([500, 503, 429, 200]) as server:
        answer = _reader(server.base_url, max_retries=3).answer("q", "c")
    assert answer.text == "Paris"
    assert len(server.requests) == 4


def test_retries_exhausted_gives_an_error_naming_server_and_status() -> None:
    with fake_openai_server([500]) as server:
        reader = _reader(server.base_url, max_retries=2)
        with pytest.raises(ReaderError) as info:
            reader.answer("q", "c")
    message = str(info.value)
    assert "HTTP 500" in message and "127.0.0.1" in message and "3 time(s)" in message
    assert len(server.requests) == 3


def test_client_errors_are_not_retried() -> None:
    with fake_openai_server([401]) as server, pytest.raises(ReaderError, match=r"HTTP 401.*\$RAGSIFT_TEST_KEY"):
        _reader(server.base_url, max_retries=5).answer("q", "c")
    assert len(server.requests) == 1


def test_overlong_prompt_is_an_error_not_a_truncation() -> None:
    with fake_openai_server([400]) as server, pytest.raises(PromptTooLongError, match=r"5000.*4096"):
        _reader(server.base_url).answer("q", "c" * 100)


def test_connection_refused_is_retried_then_reported() -> None:
    with fake_openai_server([200]) as server:
        url = server.base_url
    # the server is gone now: every attempt is refused
    with pytest.raises(ReaderError, match="APIConnectionError"):
        _reader(url, max_retries=1, timeout=5).answer("q", "c")


def test_answer_many_keeps_order_and_bounds_concurrency() -> None:
    def echo(body: dict) -> str:  # type: ignore[type-arg]
        return body["messages"][1]["content"].split("\n")[0].removeprefix("Query: ")

    questions = [f"q{i}" for i in range(6)]
    with fake_openai_server([200], answer=echo, hold_until_in_flight=2) as server:
        answers = _reader(server.base_url, max_concurrency=2).answer_many(questions, ["c"] * 6)
    assert [a.text for a in answers] == questions
    assert server.max_in_flight == 2


def test_a_malformed_reply_waits_a_doubling_capped_backoff() -> None:
    reader = OpenAIReader(backoff_seconds=1.0, max_backoff_seconds=5.0)
    assert 1.0 <= reader._backoff(0) <= 1.1
    assert 4.0 <= reader._backoff(2) <= 4.4
    assert 5.0 <= reader._backoff(6) <= 5.5  # capped


def test_http_errors_are_retried_by_the_sdk_as_the_server_says() -> None:
    with fake_openai_server([503, 200], retry_after_ms=400) as server:
        reader = _reader(server.base_url, max_retries=2)
        started = time.perf_counter()
        assert reader.answer("q", "c").text == "Paris"
        waited = time.perf_counter() - started
    assert reader._client.max_retries == 2  # the SDK's own retries, not a loop of ours
    assert len(server.requests) == 2 and 0.4 <= waited < 5  # Retry-After (retry-after-ms) honoured
    with fake_openai_server([500, 200], retry_after_ms=None) as server:
        started = time.perf_counter()
        assert _reader(server.base_url, max_retries=1).answer("q", "c").text == "Paris"
        waited = time.perf_counter() - started
    assert 0.5 * 0.75 <= waited < 5  # no Retry-After: the SDK's first backoff, 0.5 s less up to 25% jitter


def test_malformed_replies_and_http_errors_share_one_retry_budget() -> None:
    with fake_openai_server(["malformed", 500, "empty", 200]) as server:
        assert _reader(server.base_url, max_retries=3).answer("q", "c").text == "Paris"
    assert len(server.requests) == 4
    with fake_openai_server(["malformed", 500, "text", 200]) as server, \
            pytest.raises(ReaderError, match=r"failed 3 time\(s\).*not a chat completion"):
        _reader(server.base_url, max_retries=2).answer("q", "c")
    assert len(server.requests) == 3  # max_retries + 1 requests in all, not a retry loop inside another


def test_missing_key_for_openai_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGSIFT_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="RAGSIFT_TEST_KEY"):
        OpenAIReader(api_key_env="RAGSIFT_TEST_KEY").warm_up()


def test_credentials_in_the_url_are_redacted() -> None:
    assert redact_url("http://user:pw@host:8000/v1") == "http://host:8000/v1"
    reader = OpenAIReader(base_url="http://user:pw@host:8000/v1")
    assert "pw" not in str(reader.describe()) and "pw" not in repr(reader)


def test_templates_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"\{question\}"):
        OpenAIReader(user_template="Q: {question}")
    with pytest.raises(ConfigError, match=r"never use \{context\}"):
        OpenAIReader(system_template="", user_template="{query}")
