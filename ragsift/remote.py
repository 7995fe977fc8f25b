"""What every client of an OpenAI-compatible server shares (the ``openai`` reader, the
``remote-yes-no`` scorer): the API key read from the environment, URLs safe to log, retry
delays (exponential backoff with jitter, ``Retry-After`` honoured) and readable error details.

The key is read from the environment variable a plugin names when its client is built; it is
never stored in params, so it never appears in ``config()``, ``repr()``, logs or manifests.
"""

from __future__ import annotations

import os
import random
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ragsift.errors import ConfigError

__all__ = ["OPENAI_URL", "RETRYABLE_STATUS", "PROMPT_TOO_LONG", "redact_url", "api_key", "secrets", "redact", "backoff_delay",
           "error_detail", "retry_after", "retryable_status"]

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


def redact(text: str, env_name: str) -> str:
    """``text`` with the key in ``$env_name`` replaced (a server may echo it in an error body)."""
    for secret in secrets(env_name):
        text = text.replace(secret, "***")
    return text


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


def error_detail(exc: Any) -> str:
    """The server's own message of an ``openai.APIStatusError`` (at most 500 characters)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if msg:
            return str(msg)[:500]
    return str(getattr(exc, "message", exc))[:500]


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
