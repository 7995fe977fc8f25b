"""The HTTP service of ``ragsift serve``: one compressor, loaded once, behind FastAPI.

Routes: ``POST /compress`` (schema: :mod:`ragsift.service.schema`), ``GET /plugins`` (every
stage's plugins, as ``ragsift plugins --json``), ``GET /health`` (no token needed: for probes),
and FastAPI's ``/docs`` and ``/openapi.json``. Requests that arrive together are compressed in
one batch (:mod:`ragsift.service.batching`).

Limits, each answered with a status and a message that says what was wrong and which option
raises the limit: a body over ``max_request_bytes`` -> 413; more than ``max_examples`` examples
in one request or more than ``max_documents`` documents in one example -> 413; a body that is
not JSON or does not match the schema -> 422 (every problem with its place in the body); an
input the compressor refuses (a prompt over the model's window with ``overflow = "error"``) ->
422. With a token, ``/compress`` and ``/plugins`` need ``Authorization: Bearer TOKEN`` (401
otherwise); the token is compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from ragsift.compressors.base import Compressor
from ragsift.errors import DataFormatError, PromptTooLongError, RagsiftError, UsageError
from ragsift.registry import get_registry
from ragsift.service.batching import BatchQueue
from ragsift.service.schema import CompressRequest, CompressResponse, ServiceLimits
from ragsift.types import CompressionResult, Example
from ragsift.version import __version__

__all__ = ["create_app"]

log = logging.getLogger("ragsift.service")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> None:
    import json

    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 before anything
    parses it (by its Content-Length, or while it streams in without one)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send_json(send, 400, {"error": f"Content-Length {declared.decode(errors='replace')!r} is not a number."})
                return
            if size > self.limit:
                await _send_json(send, 413, {"error": self._too_large(size)})
                return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _send_json(send, 413, {"error": self._too_large(size, streamed=True)})
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, size: int, streamed: bool = False) -> str:
        what = f"more than {self.limit} bytes arrived" if streamed else f"{size} bytes"
        return (f"request body too large: {what}; this service takes at most {self.limit} bytes per request "
                "(ragsift serve --max-request-bytes). Send fewer examples per request.")


def _place(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [p for p in loc if p != "body"]
    out = "body"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def create_app(compressor: Compressor, label: str, *, limits: ServiceLimits | None = None, token: str | None = None,
               source: str = "") -> Any:
    """The FastAPI app serving ``compressor`` (already warmed up) under ``label``."""
    limits = limits or ServiceLimits()
    secret = token.encode() if token else None

    def compress_all(examples: list[Example]) -> list[CompressionResult]:
        return list(compressor.compress_many(examples))

    queue: BatchQueue[Example, CompressionResult] = BatchQueue(compress_all, limits.max_batch_examples, limits.max_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await queue.start()
        try:
            yield
        finally:
            await queue.stop()

    app = FastAPI(
        title="ragsift", version=__version__, lifespan=lifespan,
        description=f"Evidence selection for RAG: compressor '{label}'" + (f" from {source}" if source else "") +
        ". POST /compress with a question and its retrieved documents; every sentence comes back with its span, "
        "score and keep decision, plus the compressed text.",
    )

    class _Refusal(Exception):
        def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            super().__init__(message)
            self.status, self.message, self.headers = status, message, headers

    @app.exception_handler(_Refusal)
    async def _refused(_request: Request, exc: _Refusal) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        hint = "" if not media or media == "application/json" else (
            f" The body was sent as {media!r}: send JSON with 'Content-Type: application/json'.")
        problems = []
        for error in exc.errors():
            msg, place = str(error.get("msg", "")).removeprefix("Value error, "), _place(error.get("loc", ()))
            if error.get("type") == "json_invalid":
                at = [p for p in error.get("loc", ()) if isinstance(p, int)]
                detail = (error.get("ctx") or {}).get("error", "")
                msg = "not valid JSON" + (f" at character {at[0]}" if at else "") + (f" ({detail})" if detail else "")
                place = "body"
            problems.append({"place": place, "problem": msg, "type": error.get("type")})
        text = "; ".join(f"{p['place']}: {p['problem']}" for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        return JSONResponse({"error": f"malformed request: {text}{more}.{hint} See /docs for the schema.", "problems": problems},
                            status_code=422)

    async def authorized(request: Request) -> None:
        if secret is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), secret):
            raise _Refusal(401, "missing or wrong bearer token: this service needs 'Authorization: Bearer TOKEN'.",
                           {"WWW-Authenticate": "Bearer"})

    @app.post("/compress", response_model=CompressResponse, dependencies=[Depends(authorized)],
              summary="Compress one or several examples",
              responses={401: {"description": "missing or wrong bearer token"},
                         413: {"description": "request too large (bytes, examples or documents)"},
                         422: {"description": "malformed request, or an input the compressor refuses"}})
    async def compress(body: CompressRequest) -> Any:
        inputs = body.example_inputs()
        if len(inputs) > limits.max_examples:
            raise _Refusal(413, f"too many examples: {len(inputs)} in one request; the limit is {limits.max_examples} "
                                "(ragsift serve --max-examples). Split the request.")
        for i, example in enumerate(inputs):
            if len(example.documents) > limits.max_documents:
                where = f"examples[{i}]" if body.examples is not None else "the example"
                raise _Refusal(413, f"too many documents: {where} has {len(example.documents)}; the limit is "
                                    f"{limits.max_documents} per example (ragsift serve --max-documents).")
        examples = [example.to_example(i) for i, example in enumerate(inputs)]
        try:
            results, report = await queue.submit(examples)
        except (PromptTooLongError, DataFormatError, UsageError) as exc:
            raise _Refusal(422, f"the compressor refused the input: {exc}") from None
        except RagsiftError as exc:
            log.error("compression failed: %s", exc)
            raise _Refusal(500, f"compression failed: {exc}") from None
        except Exception as exc:
            log.exception("unexpected error while compressing")
            raise _Refusal(500, f"unexpected {type(exc).__name__} while compressing: {exc} (a bug in ragsift or in a "
                                "plugin; the service log has the traceback).") from None
        records = [{**result.to_record(), "compressor": label} for result in results]
        return {"compressor": label, "results": records,
                "batch": {"examples": report.examples, "requests": report.requests,
                          "queue_seconds": report.queue_seconds, "compress_seconds": report.compress_seconds}}

    @app.get("/plugins", dependencies=[Depends(authorized)], summary="Every stage's registered plugins")
    async def plugins() -> dict[str, Any]:
        return get_registry().describe()

    @app.get("/health", summary="Whether the service is up, and what it serves")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "ragsift": __version__, "compressor": label, "config": source,
                "token_required": secret is not None, "queue": queue.describe(),
                "limits": {"max_request_bytes": limits.max_request_bytes, "max_examples": limits.max_examples,
                           "max_documents": limits.max_documents}}

    app.add_middleware(BodyLimit, limit=limits.max_request_bytes)
    return app
