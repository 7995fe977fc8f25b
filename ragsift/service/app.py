"""The HTTP service of ``ragsift serve``: one compressor, loaded once, behind FastAPI.

Routes: ``POST /compress`` (schema: :mod:`ragsift.service.schema`), ``POST /rerank`` (the shape
Cohere's, Jina's and TEI's rerank clients send: :mod:`ragsift.service.rerank`), ``GET /plugins``
(every stage's plugins, as ``ragsift plugins --json``), ``GET /health`` and ``GET /metrics``
(Prometheus text: :mod:`ragsift.service.metrics`; no token needed for either: probes and scrapers),
``/openapi.json`` and the Swagger UI at ``/docs`` (:mod:`ragsift.service.docs`: its assets
served from here when the ``swagger-ui-bundle`` package is installed, else from a CDN, as the
page says). Requests that arrive together are compressed in one batch
(:mod:`ragsift.service.batching`).

Every answer that is not a result is JSON with an ``error`` that says what was wrong (and, for a
limit, which option raises it). With a token, ``/compress``, ``/rerank`` and ``/plugins`` need
``Authorization: Bearer TOKEN``, checked before the body is read (401 otherwise; Starlette's
``AuthenticationMiddleware``); the token is compared in constant time and never logged or echoed.
Then: a body over ``max_request_bytes`` -> 413, before anything parses it; a body not received
within ``body_timeout_s`` -> 408; more than ``max_examples`` examples in one request, more than
``max_documents`` documents in one example or more than ``max_characters`` characters of text in
one request (one request is compressed in one batch; the others wait behind it) -> 413; a body that is not JSON (not UTF-8, nested too
deeply, a number too long to read) or does not match the schema -> 422 (its first 20 problems, each
with its place in the body, cut to 200 characters); an input the compressor refuses (a prompt over the model's window with
``overflow = "error"``) -> 422; an answer over ``max_response_bytes`` -> 413; an unknown route
-> 404, a wrong method -> 405. Any other failure (a bug, a plugin that raises, even
``SystemExit``) -> 500 with "internal error" and a request id, never the exception's text: that
goes to the service log under the same request id; the service stays up.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from ragsift.compressors.base import Compressor
from ragsift.errors import DataFormatError, PromptTooLongError, RagsiftError, UsageError
from ragsift.registry import get_registry
from ragsift.service.batching import BatchQueue
from ragsift.service.docs import add_docs
from ragsift.service.metrics import CONTENT_TYPE, MetricsMiddleware, RequestMetrics
from ragsift.service.rerank import RerankRequest, RerankResponse, TeiRankOut, rank_documents
from ragsift.service.schema import CompressRequest, CompressResponse, ErrorOut, HealthOut, LimitsOut, PluginOut, ServiceLimits
from ragsift.types import CompressionResult, Example, make_example
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
    parses it (by its Content-Length, or while it streams in without one); a body not received
    within ``timeout`` seconds of its headers is answered 408 and the connection closed."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limit: int, timeout: float = 60.0) -> None:
        self.app, self.limit, self.timeout = app, limit, timeout

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
        try:
            async with asyncio.timeout(self.timeout):
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
        except TimeoutError:
            await _send_json(send, 408, {"error": f"request body not received within {self.timeout:g} s ({size} bytes "
                                                  "arrived); send it at once (ragsift serve --body-timeout)."},
                             [(b"connection", b"close")])
            return
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


class BearerToken(AuthenticationBackend):
    """Starlette authentication backend: the ``protected`` paths need ``Authorization: Bearer
    TOKEN`` (compared in constant time); checked by ``AuthenticationMiddleware`` before the
    request's body is read."""

    MESSAGE = "missing or wrong bearer token: this service needs 'Authorization: Bearer TOKEN'."

    def __init__(self, token: str, protected: frozenset[str]) -> None:
        self.secret, self.protected = token.encode(), protected

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        if conn.url.path not in self.protected:
            return None
        scheme, _, given = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.secret):
            raise AuthenticationError(self.MESSAGE)
        return AuthCredentials(["client"]), SimpleUser("client")


def _unauthorized(_conn: HTTPConnection, exc: AuthenticationError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _unparsable(cause: BaseException) -> str:
    """Why the standard library's JSON reader refused a body (FastAPI answers these 400 with no reason)."""
    if isinstance(cause, UnicodeDecodeError):
        return f"not valid JSON: not UTF-8 text (byte 0x{cause.object[cause.start]:02x} at byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "not valid JSON here: nested too deeply"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return f"not valid JSON here: a number with more than {sys.get_int_max_str_digits()} digits"
    return f"not valid JSON ({type(cause).__name__})"


#: a 422 lists at most this many problems, each place and problem cut to this many characters:
#: the places echo the body's own keys, so an unbounded answer would be larger than the body
#: (an 8 MB key twice: a 16 MB answer)
MAX_PROBLEMS, MAX_PROBLEM_CHARS = 20, 200


def _clip(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else f"{text[:MAX_PROBLEM_CHARS]}... ({len(text)} characters)"


def _malformed(request: Request, problems: list[dict[str, Any]]) -> JSONResponse:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    hint = "" if not media or media == "application/json" else (
        f" The body was sent as {media!r}: send JSON with 'Content-Type: application/json'.")
    listed = [{**p, "place": _clip(str(p["place"])), "problem": _clip(str(p["problem"]))} for p in problems[:MAX_PROBLEMS]]
    text = "; ".join(f"{p['place']}: {p['problem']}" for p in listed[:10])
    more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
    return JSONResponse({"error": f"malformed request: {text}{more}.{hint} See /docs for the schema.", "problems": listed},
                        status_code=422)


def _internal_error(what: str, exc: BaseException, traceback: bool = True) -> JSONResponse:
    """A 500 that says only "internal error" and a request id; what happened goes to the log under that id."""
    request_id = uuid.uuid4().hex[:16]
    log.error("request %s: %s: %s: %s", request_id, what, type(exc).__name__, exc, exc_info=exc if traceback else None)
    return JSONResponse({"error": f"internal error (request id {request_id}): the service log has the details under "
                                  "this id.", "request_id": request_id},
                        status_code=500, headers={"X-Request-ID": request_id})


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
    config_name = Path(source).name if source else ""  # the file's name, never where it lives

    queue: BatchQueue[Example, CompressionResult] = BatchQueue(lambda examples: list(compressor.compress_many(examples)),
                                                               limits.max_batch_examples, limits.max_wait_ms / 1000)

    metrics = RequestMetrics(frozenset({"/compress", "/rerank", "/plugins", "/health", "/metrics", "/docs", "/openapi.json"}))

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await queue.start()
        try:
            yield
        finally:
            await queue.stop()

    app = FastAPI(
        title="ragsift", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
        description=f"Evidence selection for RAG: compressor '{label}'" + (f" from {config_name}" if config_name else "") +
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
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for error in exc.errors():
            msg, place = str(error.get("msg", "")).removeprefix("Value error, "), _place(error.get("loc", ()))
            if error.get("type") == "json_invalid":
                at = [p for p in error.get("loc", ()) if isinstance(p, int)]
                detail = (error.get("ctx") or {}).get("error", "")
                msg = "not valid JSON" + (f" at character {at[0]}" if at else "") + (f" ({detail})" if detail else "")
                place = "body"
            problems.append({"place": place, "problem": msg, "type": error.get("type")})
        return _malformed(request, problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI: the body's JSON could not be read
            return _malformed(request, [{"place": "body", "problem": _unparsable(exc.__cause__), "type": "json_invalid"}])
        where = f"{request.method} {request.url.path}"
        message = {404: f"no such route: {where}; this service has POST /compress, POST /rerank, GET /plugins, GET /health, "
                        "GET /metrics, GET /docs.",
                   405: f"method not allowed: {where}" + (f"; use {exc.headers['Allow']}" if exc.headers and "Allow" in exc.headers
                                                          else "") + "."}.get(exc.status_code, f"{where}: {exc.detail}")
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        return _internal_error("unexpected error", exc)

    # the token is checked by the middleware (before the body is read); this declares it in the
    # OpenAPI schema, which gives /docs its Authorize button
    secured = [Security(HTTPBearer(auto_error=False, description="the service's token (ragsift serve: $RAGSIFT_SERVE_TOKEN "
                                                                 "or --token-env)"))] if token else []
    unauthorized: dict[int | str, dict[str, Any]] = (
        {401: {"model": ErrorOut, "description": "missing or wrong bearer token"}} if token else {})

    def check_size(examples: list[tuple[str, list[tuple[str, str]]]], several: bool) -> None:
        """413 for a request over the limits; ``examples``: (question, [(title, text)]) each."""
        if len(examples) > limits.max_examples:
            raise _Refusal(413, f"too many examples: {len(examples)} in one request; the limit is {limits.max_examples} "
                                "(ragsift serve --max-examples). Split the request.")
        for i, (_question, documents) in enumerate(examples):
            if len(documents) > limits.max_documents:
                where = f"examples[{i}]" if several else "the example"
                raise _Refusal(413, f"too many documents: {where} has {len(documents)}; the limit is "
                                    f"{limits.max_documents} per example (ragsift serve --max-documents).")
        # counted before anything is split or scored: compressing is linear in the text at best, and the
        # batch worker is one thread, so a request's size is how long every other request waits
        characters = sum(len(question) + sum(len(title) + len(text) for title, text in documents)
                         for question, documents in examples)
        if characters > limits.max_characters:
            raise _Refusal(413, f"too much text: {characters} characters in one request (questions, titles and "
                                f"documents); the limit is {limits.max_characters} (ragsift serve --max-characters). "
                                "Split the request, or send fewer or shorter documents.")

    async def run(examples: list[Example]) -> tuple[list[CompressionResult], Any] | JSONResponse:
        """The examples compressed in the batch queue, or the error answer."""
        try:
            return await queue.submit(examples)
        except (PromptTooLongError, DataFormatError, UsageError) as exc:
            raise _Refusal(422, f"the compressor refused the input: {exc}") from None
        except RagsiftError as exc:
            return _internal_error("compression failed", exc, traceback=False)
        except Exception as exc:  # a bug in ragsift or a plugin (BatchAborted: one that raised SystemExit, ...)
            return _internal_error("unexpected error while compressing", exc)

    def bounded(data: bytes) -> Response:
        if len(data) > limits.max_response_bytes:
            raise _Refusal(413, f"answer too large: {len(data)} bytes; this service sends at most {limits.max_response_bytes} "
                                "bytes per answer (ragsift serve --max-response-bytes). Send fewer or shorter examples "
                                "per request.")
        return Response(data, media_type="application/json")

    refusals: dict[int | str, dict[str, Any]] = {
        **unauthorized,
        400: {"model": ErrorOut, "description": "a Content-Length that is not a number"},
        408: {"model": ErrorOut, "description": "the body did not arrive in time"},
        413: {"model": ErrorOut, "description": "request too large (bytes, examples, documents or characters), or its answer"},
        422: {"model": ErrorOut, "description": "malformed request (its first 20 problems placed), or an input the "
                                                "compressor refuses"},
        500: {"model": ErrorOut, "description": "internal error (the service log has the details under the request id)"}}

    @app.post("/compress", response_model=CompressResponse, summary="Compress one or several examples", dependencies=secured,
              responses=refusals)
    async def compress(body: CompressRequest) -> Any:
        inputs = body.example_inputs()
        check_size([(e.question, [(d.title, d.text) for d in e.documents]) for e in inputs], body.examples is not None)
        examples = [example.to_example(i) for i, example in enumerate(inputs)]
        outcome = await run(examples)
        if isinstance(outcome, JSONResponse):
            return outcome
        results, report = outcome
        records = [{**result.to_record(), "compressor": label, "document_ids": [d.id for d in example.documents]}
                   for result, example in zip(results, examples, strict=True)]
        answer = CompressResponse.model_validate(
            {"compressor": label, "results": records,
             "batch": {"examples": report.examples, "requests": report.requests,
                       "queue_seconds": report.queue_seconds, "compress_seconds": report.compress_seconds}})
        return bounded(answer.model_dump_json().encode())

    @app.post("/rerank", response_model=RerankResponse | list[TeiRankOut], dependencies=secured, responses=refusals,
              summary="Score and prune documents for a query (Cohere's, Jina's or TEI's rerank request)",
              description="Cohere / Jina: {query, documents, top_n?, return_documents?} -> {results: [{index, "
              "relevance_score, document: {text}}]}. TEI: {query, texts, return_text?} -> [{index, score, text?}]. "
              "Best first. A document's score is the maximum of its sentences' scores (the scorer's scale); its text "
              "is pruned to the sentences the compressor kept, in document order.")
    async def rerank(body: RerankRequest) -> Any:
        documents = body.document_values()
        check_size([(body.query, [(d.get("title", ""), d["text"]) for d in documents])], False)
        example = make_example(body.query, documents, id="0", owner="POST /rerank")
        outcome = await run([example])
        if isinstance(outcome, JSONResponse):
            return outcome
        ranked = rank_documents(outcome[0][0], len(documents))
        if body.tei:
            tei = [TeiRankOut(index=r.index, score=r.score, text=r.text if body.wants_text else None) for r in ranked]
            return bounded(b"[" + b",".join(t.model_dump_json(exclude_none=True).encode() for t in tei) + b"]")
        chosen = ranked[:body.top_n] if body.top_n is not None else ranked
        answer = RerankResponse.model_validate({"id": uuid.uuid4().hex, "model": label, "results": [
            {"index": r.index, "relevance_score": r.score, **({"document": {"text": r.text}} if body.wants_text else {})}
            for r in chosen]})
        return bounded(answer.model_dump_json(exclude_none=True).encode())

    @app.get("/plugins", summary="Every stage's registered plugins", response_model=dict[str, list[PluginOut]],
             dependencies=secured, responses=unauthorized)
    async def plugins() -> dict[str, Any]:
        return get_registry().describe()

    @app.get("/health", summary="Whether the service is up, and what it serves", response_model=HealthOut)
    async def health() -> dict[str, Any]:
        return {"status": "ok", "ragsift": __version__, "compressor": label, "config": config_name,
                "token_required": bool(token), "queue": queue.describe(),
                "limits": {key: getattr(limits, key) for key in LimitsOut.model_fields}}

    @app.get("/metrics", summary="Request counts and latencies (Prometheus text format)",
             response_class=Response, responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {}}}})
    async def metrics_text() -> Response:
        # open like /health (as vLLM's and TEI's /metrics are): counts and latencies, nothing a request held
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    add_docs(app)
    app.add_middleware(BodyLimit, limit=limits.max_request_bytes, timeout=limits.body_timeout_s)
    if token:  # the token is checked before anything reads the body
        app.add_middleware(AuthenticationMiddleware, backend=BearerToken(token, frozenset({"/compress", "/rerank", "/plugins"})),
                           on_error=_unauthorized)
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # outermost: refused requests (401, 413) are counted too
    return app
