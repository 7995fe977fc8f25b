"""The ``openai`` reader against a real llama.cpp server (SmolLM2) on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llamacpp_server import LlamaCppServer, llamacpp_server

from ragsift.errors import PromptTooLongError
from ragsift.readers.base import ReaderError
from ragsift.readers.openai_reader import OpenAIReader

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LlamaCppServer]:
    with llamacpp_server(tmp_path) as running:
        yield running


def test_answers_through_the_openai_reader(server: LlamaCppServer) -> None:
    reader = OpenAIReader(base_url=server.base_url, model=server.model, max_new_tokens=32, max_concurrency=2)
    answers = reader.answer_many(
        ["What is the capital of France?", "Who wrote the play Hamlet?"],
        ["Paris is the capital and largest city of France.", "Hamlet is a tragedy written by William Shakespeare."],
    )
    assert "Paris" in answers[0].text
    assert "Shakespeare" in answers[1].text
    for answer in answers:
        assert answer.prompt_tokens and answer.prompt_tokens > 40  # the EXIT prompt was sent whole
        assert 0 < (answer.completion_tokens or 0) <= 32


def test_a_server_stopped_mid_run_gives_a_clear_error(server: LlamaCppServer) -> None:
    reader = OpenAIReader(base_url=server.base_url, model=server.model, max_new_tokens=8, max_retries=2,
                          backoff_seconds=0.05, timeout=300)  # the first answer may be slow on a loaded machine;
    first = reader.answer("What is the capital of France?", "Paris is the capital of France.")
    assert first.text
    server.stop()  # ... after this, connections are refused at once: the timeout is never reached
    with pytest.raises(ReaderError) as info:
        reader.answer("Who wrote Hamlet?", "Hamlet was written by Shakespeare.")
    message = str(info.value)
    assert f"127.0.0.1:{server.port}" in message and "3 time(s)" in message and "Connection" in message


def test_an_overlong_prompt_is_refused_not_truncated(tmp_path: Path) -> None:
    with llamacpp_server(tmp_path, n_ctx=256) as small:
        reader = OpenAIReader(base_url=small.base_url, model=small.model, max_new_tokens=8)
        with pytest.raises(PromptTooLongError):
            reader.answer("Which word?", "alpha beta gamma delta " * 200)
