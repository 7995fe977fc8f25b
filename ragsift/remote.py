"""What every client of an OpenAI-compatible server shares (the ``openai`` reader, the
``remote-yes-no`` scorer): the API key read from the environment, URLs safe to log, readable
and redacted error details, and :func:`call_with_retries`.

Retries are the ``openai`` SDK's own (``max_retries`` on the client): connection errors,
timeouts, 408, 409, 429 and 5xx, after its exponential backoff with jitter (0.5 s doubling to
8 s) or the server's ``Retry-After`` / ``retry-after-ms``. What ragsift adds on top: a 200 reply
that is not the completion asked for (not JSON, an HTML page, no choices) is retried too, from the
same budget; a 400 that says the prompt is over the model's window is a
:class:`~ragsift.errors.PromptTooLongError` (nothing is truncated); and every message is redacted
of the API key and names the server, the model and what failed last.

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

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.plugin import Params

__all__ = ["OPENAI_URL", "PROMPT_TOO_LONG", "redact_url", "api_key", "secrets", "redact", "redact_secrets",
           "redact_config_text", "redact_config_table", "SECRET_KEY",
           "MIN_SECRET_PREFIX", "backoff_delay", "error_detail", "BadReply", "call_with_retries", "make_client", "RetryParams"]

T = TypeVar("T")

OPENAI_URL = "https://api.openai.com/v1"
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


_SECRET_NAME = r"api[_-]?key|access[_-]?token|token|password|passwd|secret|authorization|bearer"
#: keys whose values a manifest never shows (an inline key in a table ragsift does not use)
SECRET_KEY = re.compile(rf"(?i)^({_SECRET_NAME})$")
#: ``scheme://user:password@``: the password part
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@\"']+):([^@/\s\"']+)@", re.IGNORECASE)
#: ``api_key = "value"`` (a TOML key, bare or quoted, with a one-line string value)
_INLINE_SECRET = re.compile(rf"(?im)((?:^|[{{,.])\s*[\"']?(?:{_SECRET_NAME})[\"']?\s*=\s*)([\"'])(?:(?!\2).)*\2")


def redact_config_text(text: str) -> str:
    """A config's text with URL passwords (``scheme://user:***@host``) and the values of
    secret-named keys (``api_key = "***"``) hidden: what a manifest records of a config."""
    return _INLINE_SECRET.sub(r'\1\2***\2', _URL_PASSWORD.sub(r"\1:***@", text))


def redact_config_table(value: Any) -> Any:
    """A (nested) config table with the same secrets hidden as :func:`redact_config_text`."""
    if isinstance(value, dict):
        return {k: "***" if isinstance(v, str) and isinstance(k, str) and SECRET_KEY.match(k) else redact_config_table(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact_config_table(v) for v in value]
    return _URL_PASSWORD.sub(r"\1:***@", value) if isinstance(value, str) else value


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


class RetryParams(Params):
    """The retry params of every client of an OpenAI-compatible server (mixed into its params)."""

    max_retries: int = Field(4, ge=0, le=20, description="retries per request, one budget: 408, 409, 429, 5xx, timeouts and "
                             "connection errors (the openai SDK's retries: its backoff with jitter, Retry-After "
                             "honoured), and malformed replies")
    backoff_seconds: float = Field(0.5, ge=0, le=60, description="first delay before retrying a malformed reply; doubles "
                                   "each retry (HTTP errors wait as the SDK says)")
    max_backoff_seconds: float = Field(30.0, ge=0, le=600, description="the longest delay before retrying a malformed reply")


def backoff_delay(attempt: int, first: float, cap: float) -> float:
    """Seconds before retrying a malformed reply the ``attempt``-th time: ``first * 2**attempt``,
    at most ``cap``, plus up to 10% jitter (HTTP errors are retried by the SDK, with its own)."""
    return min(first * (2**attempt), cap) * (1 + 0.1 * random.random())


def make_client(base_url: str, key: str, timeout: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client that retries as the SDK does, up to ``max_retries`` times."""
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


def error_detail(exc: Any, redact: Callable[[str], str] = lambda text: text) -> str:
    """The server's own message of an ``openai.APIStatusError``, redacted by ``redact`` and then
    cut to 500 characters (in that order: a key cut by the clip would no longer be recognised)."""
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
    return redact(str(msg) if msg else str(getattr(exc, "message", exc)))[:500]


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
                      retries: int, backoff: Callable[[int], float], redact: Callable[[str], str],
                      key_env: str, too_long: Callable[[str], Exception], error: Callable[[str], Exception]) -> T:
    """``read(request(n).parse())``: ``request(n)`` sends the request through the SDK's raw-response
    interface (``client.with_options(max_retries=n)....with_raw_response.create(...)``), which
    retries HTTP errors, timeouts and connection errors itself, at most ``n`` times. A reply that
    is not JSON or that ``read`` refuses (:class:`BadReply`) is retried after ``backoff(i)``
    seconds, from the same budget of ``retries``. A prompt the server calls too long raises
    ``too_long(detail)``; another HTTP error, or a budget spent, ``error(...)`` naming the last
    failure. Every message goes through ``redact``."""
    import openai

    left, tries, bad = retries, 0, 0
    while True:
        try:
            raw = request(left)
        except openai.APIStatusError as exc:
            status, detail = exc.status_code, error_detail(exc, redact)
            if status == 400 and PROMPT_TOO_LONG.search(detail):
                raise too_long(detail) from None
            # not one the SDK retries (timeout, conflict, rate limit, server errors)
            if status in (401, 403) or not (status in (408, 409, 429) or status >= 500):
                hint = f" Check the key in ${key_env}." if status in (401, 403) else ""
                raise error(f"{owner}: server {server} answered HTTP {status} for model '{model}': {detail}.{hint}") from None
            raise _spent(error, redact, owner, server, model, tries + left + 1, f"HTTP {status} ({detail})") from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise _spent(error, redact, owner, server, model, tries + left + 1,
                         f"{type(exc).__name__} ({redact(str(exc))})") from None
        used = int(getattr(raw, "retries_taken", 0)) + 1
        tries, left = tries + used, left - used
        try:
            return read(raw.parse())
        except (ValueError, openai.APIResponseValidationError) as exc:  # 200 with a body that is not JSON
            last = f"a reply that is not valid JSON ({exc})"
        except BadReply as exc:
            last = redact(str(exc))
        if left < 0:
            raise _spent(error, redact, owner, server, model, tries, last)
        time.sleep(backoff(bad))
        bad += 1


def _spent(error: Callable[[str], Exception], redact: Callable[[str], str], owner: str, server: str, model: str,
           tries: int, last: str) -> Exception:
    return error(redact(f"{owner}: server {server} failed {tries} time(s) for model '{model}'; last: {last}. "
                        "Check that the server is up and not overloaded, or raise max_retries / timeout."))
