"""What every client of an OpenAI-compatible server shares (the ``openai`` reader, the
``remote-yes-no`` scorer): the API key read from the environment, URLs safe to log, retry
delays (exponential backoff with jitter, ``Retry-After`` honoured), readable error details and
the one retry loop (:func:`call_with_retries`).

The key is read from the environment variable a plugin names when its client is built; it is
never stored in params, so it never appears in ``config()``, ``repr()``, logs or manifests.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ragsift.errors import ConfigError

__all__ = ["OPENAI_URL", "RETRYABLE_STATUS", "PROMPT_TOO_LONG", "redact_url", "api_key", "secrets", "redact",
           "redact_secrets", "MIN_SECRET_PREFIX", "backoff_delay",
           "error_detail", "retry_after", "retryable_status", "BadReply", "call_with_retries"]

T = TypeVar("T")

OPENAI_URL = "https://api.openai.com/v1"
#: statuses below 500 that are worth another try (timeout, conflict, rate limit); every 5xx is too
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: a 400 whose message says the prompt is over the model's context window
PROMPT_TOO_LONG = re.compile(r"context|too long|maximum|exceed|n_ctx", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` without any ``user:password@`` part (safe to log and record)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def api_key(env_name: str, base_url: str, owner: str) -> str:
    """The key in ``$env_name``; OpenAI's own server needs one (a ConfigError naming the
    variable), local servers (llama.cpp, vLLM without --api-key, Ollama) accept any."""
    key = os.environ.get(env_name)
    if key:
        return key
    if urlsplit(base_url).hostname == urlsplit(OPENAI_URL).hostname:
        raise ConfigError(
            f"{owner}: the API key is read from the environment variable '{env_name}', which is not set. "
            "Export it, or set api_key_env to the name of the variable that holds your key."
        )
    return "no-key"


def secrets(env_name: str) -> list[str]:
    """The values that must never be shown (the key, when set)."""
    key = os.environ.get(env_name)
    return [key] if key else []


#: a run of at least this many of a secret's first characters is redacted too (a clipped message
#: may end inside the key); fewer are not a usable part of a key and are common text
MIN_SECRET_PREFIX = 6


def redact_secrets(text: str, values: Iterable[str]) -> str:
    """``text`` with every ``values`` item replaced by ``***``, and also every run of its first
    characters (at least :data:`MIN_SECRET_PREFIX`, or the whole value when shorter): a message
    cut inside the key (a clipped error body) shows none of it."""
    for secret in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(secret, "***")
        head = secret[: min(MIN_SECRET_PREFIX, len(secret))]
        start = text.find(head)
        while start != -1:
            end = start + len(head)
            while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
                end += 1
            text = text[:start] + "***" + text[end:]
            start = text.find(head, start + 3)
    return text


def redact(text: str, env_name: str) -> str:
    """``text`` with the key in ``$env_name`` (and any prefix of it: :func:`redact_secrets`)
    replaced; a server may echo the key in an error body."""
    return redact_secrets(text, secrets(env_name))


def backoff_delay(attempt: int, first: float, cap: float, retry_after_s: float | None = None) -> float:
    """Seconds before retry ``attempt + 1``: ``first * 2**attempt``, at least the server's
    Retry-After, at most ``cap``, plus up to 10% jitter so that concurrent retries spread out."""
    delay = first * (2**attempt)
    if retry_after_s is not None:
        delay = max(delay, retry_after_s)
    delay = min(delay, cap)
    return delay * (1 + 0.1 * random.random())


def retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def error_detail(exc: Any, redact: Callable[[str], str] = lambda text: text) -> str:
    """The server's own message of an ``openai.APIStatusError``, redacted by ``redact`` and then
    cut to 500 characters (in that order: a key cut by the clip would no longer be recognised)."""
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
    return redact(str(msg) if msg else str(getattr(exc, "message", exc)))[:500]


def retry_after(exc: Any) -> float | None:
    """The ``Retry-After`` header of an ``openai.APIStatusError`` in seconds, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class BadReply(Exception):
    """A 200 reply that is not the completion asked for (not one, no choices): retried."""


def clip(value: object, size: int = 80) -> str:
    """``value`` as text (bytes decoded), cut to ``size`` characters with "..." after: for messages."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= size else text[:size] + "..."


def first_choice(response: Any, kind: str) -> Any:
    """The first choice of a ``kind`` reply ("completion", "chat completion"); :class:`BadReply`
    when the reply is not one (a bare string or bytes) or has no choices."""
    if isinstance(response, (str, bytes)):
        raise BadReply(f"a reply that is not a {kind} ({clip(response)!r})")
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise BadReply(f"a {kind} with no choices")
    return choices[0]


def call_with_retries(request: Callable[[int], Any], read: Callable[[Any], T], *, owner: str, server: str, model: str,
                      attempts: int, backoff: Callable[[int, float | None], float], redact: Callable[[str], str],
                      key_env: str, too_long: Callable[[str], Exception], error: Callable[[str], Exception]) -> T:
    """``read(request(attempt))`` for attempt 0, 1, ... : connection errors, timeouts, retryable
    HTTP statuses, bodies that are not JSON and :class:`BadReply` are retried after
    ``backoff(attempt, Retry-After)`` seconds; a prompt the server calls too long raises
    ``too_long(detail)``, another HTTP error ``error(...)`` at once; after ``attempts`` failures
    ``error(...)`` names the last one. Every message goes through ``redact``."""
    import openai

    last = ""
    for attempt in range(attempts):
        delay: float | None = None
        try:
            response = request(attempt)
        except openai.APIStatusError as exc:
            status, detail = exc.status_code, error_detail(exc, redact)
            if status == 400 and PROMPT_TOO_LONG.search(detail):
                raise too_long(detail) from None
            if not retryable_status(status):
                hint = f" Check the key in ${key_env}." if status in (401, 403) else ""
                raise error(f"{owner}: server {server} answered HTTP {status} for model '{model}': {detail}.{hint}") from None
            last, delay = f"HTTP {status} ({detail})", retry_after(exc)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            last = f"{type(exc).__name__} ({redact(str(exc))})"
        except (ValueError, openai.APIResponseValidationError) as exc:  # 200 with a body that is not JSON
            last = f"a reply that is not valid JSON ({exc})"
        else:
            try:
                return read(response)
            except BadReply as exc:
                last = redact(str(exc))
        if attempt + 1 < attempts:
            time.sleep(backoff(attempt, delay))
    raise error(redact(f"{owner}: server {server} failed {attempts} time(s) for model '{model}'; last: {last}. "
                       "Check that the server is up and not overloaded, or raise max_retries / timeout."))
