"""A reader for any OpenAI-compatible chat server: OpenAI, vLLM, llama.cpp, Ollama.

The API key is read from the environment variable named by ``api_key_env`` when the client is
built; it is never stored in the params, so it never appears in ``config()``, ``repr()``, logs
or run manifests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

from pydantic import Field

from ragsift.errors import PromptTooLongError
from ragsift.readers.base import Reader, ReaderAnswer, ReaderError, ReaderParams, cut_at_stop
from ragsift.remote import (
    OPENAI_URL,
    BadReply,
    RetryParams,
    api_key,
    backoff_delay,
    call_with_retries,
    clip,
    first_choice,
    make_client,
    redact,
    redact_url,
    secrets,
)

__all__ = ["OpenAIReader", "OpenAIReaderParams", "redact_url"]


class OpenAIReaderParams(ReaderParams, RetryParams):
    base_url: str = Field(OPENAI_URL, description="server URL ending in /v1 (vLLM, llama.cpp: http://HOST:PORT/v1)")
    model: str = Field("gpt-4o-mini", description="model name as the server knows it")
    api_key_env: str = Field("OPENAI_API_KEY", min_length=1, description="NAME of the env var holding the key")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per request")
    max_concurrency: int = Field(4, ge=1, le=256, description="requests in flight in answer_many")
    temperature: float = Field(0.0, ge=0, le=2, description="0 = greedy")
    seed: int | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    tokenizer: str | None = Field(None, description="model string whose tokenizer counts tokens for reports")


class OpenAIReader(Reader):
    """Chat completions with retries (exponential backoff) and a bounded thread pool."""

    Params = OpenAIReaderParams
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._client: Any = None
        self._lock = threading.Lock()
        self.server = redact_url(self.params.base_url)

    def warm_up(self) -> None:
        with self._lock:
            if self._client is None:
                key = api_key(self.params.api_key_env, self.params.base_url, "OpenAIReader")
                self._client = make_client(self.params.base_url, key, self.params.timeout, self.params.max_retries)

    def tokenizer_spec(self) -> str | None:
        return self.params.tokenizer

    def secrets(self) -> list[str]:
        return secrets(self.params.api_key_env)

    def _redact(self, text: str) -> str:
        """``text`` with the API key replaced (a server may echo it in an error body)."""
        return redact(text, self.params.api_key_env)

    def describe(self) -> dict[str, Any]:
        config = self.config()
        config["base_url"] = self.server
        return {"class": type(self).__qualname__, "config": config, "server": self.server, "model": self.params.model}

    def __repr__(self) -> str:
        return f"OpenAIReader(server={self.server!r}, model={self.params.model!r})"

    def _request(self, question: str, context: str) -> ReaderAnswer:
        self.warm_up()
        body: dict[str, Any] = {
            "model": self.params.model,
            "messages": self.prompt.messages(question, context),
            "temperature": self.params.temperature,
            self.params.max_tokens_field: self.params.max_new_tokens,
        }
        if self.params.stop:
            body["stop"] = list(self.params.stop)
        if self.params.seed is not None:
            body["seed"] = self.params.seed
        started = 0.0

        def request(retries: int) -> Any:
            nonlocal started
            started = time.perf_counter()
            return self._client.with_options(max_retries=retries).chat.completions.with_raw_response.create(**body)

        def too_long(detail: str) -> PromptTooLongError:
            return PromptTooLongError(
                f"OpenAIReader: server {self.server} refused the prompt as too long for model "
                f"'{self.params.model}' ({len(context)} characters of context, answer budget "
                f"{self.params.max_new_tokens} tokens): {detail}. Nothing is truncated: compress "
                "the context more, or serve the model with a larger context window."
            )

        return call_with_retries(request, lambda response: self._to_answer(response, time.perf_counter() - started),
                                 owner="OpenAIReader", server=self.server, model=self.params.model,
                                 retries=self.params.max_retries, backoff=self._backoff, redact=self._redact,
                                 key_env=self.params.api_key_env, too_long=too_long, error=ReaderError)

    def _backoff(self, attempt: int) -> float:
        return backoff_delay(attempt, self.params.backoff_seconds, self.params.max_backoff_seconds)

    def _to_answer(self, response: Any, seconds: float) -> ReaderAnswer:
        message = getattr(first_choice(response, "chat completion"), "message", None)
        content = getattr(message, "content", None) or ""
        if not isinstance(content, str):
            raise BadReply(f"a chat completion whose content is not text ({clip(content)!r})")
        usage = getattr(response, "usage", None)
        return ReaderAnswer(
            text=cut_at_stop(content, self.params.stop),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            seconds=seconds,
        )

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self._check_lengths(questions, contexts)
        if not questions:
            return []
        self.warm_up()
        if len(questions) == 1 or self.params.max_concurrency == 1:
            return [self._request(q, c) for q, c in zip(questions, contexts, strict=True)]
        with ThreadPoolExecutor(max_workers=min(self.params.max_concurrency, len(questions))) as pool:
            return list(pool.map(self._request, questions, contexts))
