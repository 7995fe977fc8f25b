"""EXIT's Yes/No score from a model behind an OpenAI-compatible completions endpoint (vLLM,
llama.cpp's server, any server of the legacy ``/v1/completions`` API with ``logprobs``).

Each sentence's prompt (the template with the query, the sentence's OWN document as
``"{title}\\n{text}"`` and the sentence, as ``causal-yes-no`` builds it) is sent as text with
``max_tokens = 1``, ``temperature = 0`` and ``logprobs = top_logprobs``. The score is
``P(Yes) / (P(Yes) + P(No)) = sigmoid(logprob(Yes) - logprob(No))`` of the first generated
token's distribution: the same quantity the local scorer computes from the logits.

A server returns only the top-k log-probabilities (vLLM caps k at ``--max-logprobs``, 20 by
default), so "Yes" or "No" may be missing from the list. Nothing is guessed silently:

- ``missing = "error"`` (default): the call fails, naming the sentence, what the server
  returned, and the two ways out;
- ``missing = "floor"``: the missing token's log-probability is replaced by the k-th largest
  returned one, an upper bound for every token outside the top k. With "No" missing the score is
  then a lower bound of the true one; with "Yes" missing an upper bound. Each such sentence is
  logged as a warning and counted in ``stats`` (``floored``, ``lower_bounds``, ``upper_bounds``).
  With both missing there is no bound: always an error.

The tokens are matched by their text (``positive``/``negative``): a model whose "Yes" is not one
token never shows it in the list, so ``missing = "error"`` refuses it. Requests run in a bounded
thread pool (``max_concurrency``) with the ``openai`` reader's retries (the SDK's, plus malformed
replies: :mod:`ragsift.remote`); the API key comes only from the environment (``api_key_env``). A prompt the
server refuses as over its context window is a :class:`PromptTooLongError`: nothing is cut.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ragsift.errors import ConfigError, PromptTooLongError, RagsiftError
from ragsift.lm import EXIT_TEMPLATE, YesNoTemplate, document_context
from ragsift.plugin import OptionalName
from ragsift.remote import (
    RetryParams,
    api_key,
    backoff_delay,
    call_with_retries,
    first_choice,
    make_client,
    redact,
    redact_url,
)
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["RemoteYesNoScorer", "RemoteYesNoParams", "RemoteScoringError", "URL_ENV", "yes_no_score"]

log = logging.getLogger(__name__)

#: where the server URL is read from when the config gives none
URL_ENV = "RAGSIFT_YES_NO_URL"


class RemoteScoringError(RagsiftError, RuntimeError):
    """The server could not give a Yes/No score (down, refusing, or without both tokens)."""


class RemoteYesNoParams(RetryParams):
    #: server URL ending in /v1 (vLLM, llama.cpp: http://HOST:PORT/v1); None: read from ``base_url_env``
    base_url: OptionalName = None
    #: NAME of the environment variable holding the URL when ``base_url`` is not given
    base_url_env: str = Field(URL_ENV, min_length=1)
    #: the model as the server names it; None: the server's only model (GET /models)
    model_name: OptionalName = None
    #: NAME of the environment variable holding the API key (unset: no key, as local servers expect)
    api_key_env: str = Field("RAGSIFT_YES_NO_API_KEY", min_length=1)
    #: the prompt, with {query}, {context} and {sentence} once each, in that order
    template: str = EXIT_TEMPLATE
    positive: str = Field("Yes", min_length=1)
    negative: str = Field("No", min_length=1)
    #: how many next-token log-probabilities to ask for (vLLM's default cap is 20)
    top_logprobs: int = Field(20, ge=1, le=1000)
    #: when "Yes" or "No" is not among them: fail, or bound it by the k-th returned logprob
    missing: Literal["error", "floor"] = "error"
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per request")
    max_concurrency: int = Field(8, ge=1, le=256, description="requests in flight per score call")

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        YesNoTemplate.parse(value)
        return value


def yes_no_score(positive_logprob: float, negative_logprob: float) -> float:
    """``exp(p) / (exp(p) + exp(n))`` = ``sigmoid(p - n)``, without overflow."""
    return 0.5 * (1.0 + math.tanh((positive_logprob - negative_logprob) / 2.0))


@dataclass(frozen=True)
class _Reading:
    """The two log-probabilities of one prompt; ``bounded`` names the token whose value is the
    floor (None: both were returned); ``top`` is the list the server returned."""

    positive: float
    negative: float
    bounded: str | None = None
    top: Mapping[str, float] = field(default_factory=dict)


class RemoteYesNoScorer(Scorer):
    """P(Yes)/(P(Yes)+P(No)) from a server's next-token log-probabilities."""

    Params = RemoteYesNoParams
    #: scoring needs a running server (the conformance kit checks only what needs none)
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.template = YesNoTemplate.parse(self.params.template)
        self._client: Any = None
        self._model: str | None = self.params.model_name
        self._lock = threading.Lock()
        #: counters of the last ``score`` call
        self.stats: dict[str, Any] = {}
        #: the next-token top logprobs the server returned for each sentence of the last call
        self.last_logprobs: list[dict[str, float]] = []

    @property
    def base_url(self) -> str:
        """The server URL: the param, else the environment variable it names."""
        url = self.params.base_url or os.environ.get(self.params.base_url_env, "").strip()
        if not url:
            raise ConfigError(f"RemoteYesNoScorer: no server: set base_url in the config, or export "
                              f"{self.params.base_url_env}=http://HOST:PORT/v1.")
        return url

    @property
    def server(self) -> str:
        return redact_url(self.base_url)

    def config(self) -> dict[str, Any]:
        """The params, with the URL read from the environment filled in (redacted), so that
        manifests and score-cache keys say which server scored."""
        config = super().config()
        if config["base_url"] is None and os.environ.get(self.params.base_url_env, "").strip():
            config["base_url"] = self.server
        return config

    def check_model_files(self) -> None:
        """The model lives on the server: no local file to check (``ragsift config validate``)."""

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)

    def __repr__(self) -> str:
        url = self.params.base_url or f"${self.params.base_url_env}"
        return f"RemoteYesNoScorer(server={redact_url(url)!r}, model_name={self.params.model_name!r})"

    def warm_up(self) -> None:
        """Build the client and, without ``model_name``, ask the server for its model."""
        with self._lock:
            if self._client is not None:
                return
            p = self.params
            client = make_client(self.base_url, api_key(p.api_key_env, self.base_url, "RemoteYesNoScorer"), p.timeout,
                                 p.max_retries)
            if self._model is None:
                self._model = self._only_model(client)
            self._client = client

    def _only_model(self, client: Any) -> str:
        import openai

        try:
            names = [m.id for m in client.models.list()]
        except openai.OpenAIError as exc:
            raise RemoteScoringError(self._redact(f"RemoteYesNoScorer: cannot list the models of {self.server} "
                                                  f"({type(exc).__name__}: {exc}); is the server up? Or set model_name.")) from None
        if len(names) != 1:
            raise ConfigError(f"RemoteYesNoScorer: {self.server} serves {len(names)} models ({', '.join(names) or 'none'}); "
                              "set model_name to one of them.")
        return str(names[0])

    def _redact(self, text: str) -> str:
        return redact(text, self.params.api_key_env)

    def prompt(self, example: Example, sentence: Sentence) -> str:
        """The text sent for one sentence."""
        return self.template.render(example.question, document_context(example.documents[sentence.doc_index]), sentence.text)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        self.stats = {"prompts": len(sentences), "requests": 0, "retries": 0, "floored": 0, "lower_bounds": 0, "upper_bounds": 0}
        self.last_logprobs = []
        if not sentences:
            return np.zeros(0)
        self.warm_up()
        prompts = [self.prompt(example, s) for s in sentences]
        where = [f"example '{example.id}', sentence {s.id}" for s in sentences]
        workers = min(self.params.max_concurrency, len(prompts))
        if workers == 1:
            readings = [self._request(p, w) for p, w in zip(prompts, where, strict=True)]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                readings = list(pool.map(self._request, prompts, where))
        self.last_logprobs = [dict(r.top) for r in readings]
        for reading, place in zip(readings, where, strict=True):
            if reading.bounded is not None:
                self._count_bound(reading, place)
        return np.array([yes_no_score(r.positive, r.negative) for r in readings], dtype=np.float64)

    def _count_bound(self, reading: _Reading, where: str) -> None:
        lower = reading.bounded == self.params.negative
        self.stats["floored"] += 1
        self.stats["lower_bounds" if lower else "upper_bounds"] += 1
        log.warning("RemoteYesNoScorer: %s: %r is not among the server's top %d logprobs; its logprob is bounded by the "
                    "k-th returned one, so the score is %s bound (missing = \"floor\"). Raise top_logprobs for exact scores.",
                    where, reading.bounded, self.params.top_logprobs, "a lower" if lower else "an upper")

    def _request(self, prompt: str, where: str) -> _Reading:
        p = self.params

        def request(retries: int) -> Any:
            raw = self._client.with_options(max_retries=retries).completions.with_raw_response.create(
                model=self._model, prompt=prompt, max_tokens=1, temperature=0.0, logprobs=p.top_logprobs)
            with self._lock:  # the requests that got an answer (the SDK's retries included)
                self.stats["requests"] += raw.retries_taken + 1
                self.stats["retries"] += raw.retries_taken + (retries < p.max_retries)
            return raw

        def too_long(detail: str) -> PromptTooLongError:
            return PromptTooLongError(f"RemoteYesNoScorer: {where}: server {self.server} refused the prompt as too long "
                                      f"for model '{self._model}': {detail}. Nothing is cut: serve the model with a larger "
                                      "context window, or split the documents.")

        return call_with_retries(request, lambda response: self._reading(response, where), owner="RemoteYesNoScorer",
                                 server=self.server, model=str(self._model), retries=p.max_retries,
                                 backoff=lambda attempt: backoff_delay(attempt, p.backoff_seconds, p.max_backoff_seconds),
                                 redact=self._redact, key_env=p.api_key_env, too_long=too_long, error=RemoteScoringError)

    def _reading(self, response: Any, where: str) -> _Reading:
        logprobs = getattr(first_choice(response, "completion"), "logprobs", None)
        top = getattr(logprobs, "top_logprobs", None)
        if not top or not isinstance(top[0], Mapping) or not top[0]:
            raise RemoteScoringError(f"RemoteYesNoScorer: server {self.server} returned no next-token logprobs for model "
                                     f"'{self._model}' ({where}); it must support 'logprobs' on /v1/completions "
                                     "(llama.cpp's server: logits_all on; vLLM: any version).")
        return self.read_logprobs(top[0], where)

    def read_logprobs(self, top: Mapping[str, float], where: str = "a prompt") -> _Reading:
        """The Yes and No log-probabilities of one returned top-k list, by the ``missing`` rule."""
        p = self.params
        values = {str(token): float(value) for token, value in top.items()}
        pos, neg = values.get(p.positive), values.get(p.negative)
        if pos is not None and neg is not None:
            return _Reading(pos, neg, top=values)
        absent = [t for t, v in ((p.positive, pos), (p.negative, neg)) if v is None]
        shown = ", ".join(f"{t!r} {v:.3f}" for t, v in sorted(values.items(), key=lambda kv: -kv[1])[:5])
        problem = (f"RemoteYesNoScorer: {where}: {' and '.join(map(repr, absent))} "
                   f"{'is' if len(absent) == 1 else 'are'} not among the top {p.top_logprobs} next-token logprobs the "
                   f"server {self.server} returned (the first: {shown})")
        if len(absent) == 2:
            raise RemoteScoringError(f"{problem}; with neither token the score has no bound. Raise top_logprobs "
                                     "(vLLM: --max-logprobs), or check the template ends where the model answers.")
        if p.missing == "error":
            raise RemoteScoringError(f"{problem}. Raise top_logprobs (vLLM: --max-logprobs), or set missing = \"floor\" "
                                     "to bound the score by the k-th returned logprob.")
        # every token outside the returned top k has a logprob at most the k-th largest returned
        # (a server may add the sampled token beyond k; at temperature 0 it is the first one)
        ranked = sorted(values.values(), reverse=True)
        floor = ranked[min(p.top_logprobs, len(ranked)) - 1]
        if pos is None:
            assert neg is not None
            return _Reading(floor, neg, bounded=p.positive, top=values)
        return _Reading(pos, floor, bounded=p.negative, top=values)
