"""``GET /metrics`` of ``ragsift serve``: request counts and latencies in Prometheus's text format.

Written by hand (the text exposition format 0.0.4: ``# HELP``, ``# TYPE``, one sample a line)
rather than with ``prometheus_client``: that package is not a dependency of the ``serve`` extra,
and two metric families do not justify one more (its process-wide default registry would also
mix several apps of one process, as the tests start). Counted by an ASGI middleware outside
every other one, so a request refused by the token (401) or a size limit (413) is counted too.

- ``ragsift_http_requests_total{endpoint, method, status}``: a counter;
- ``ragsift_http_request_duration_seconds{endpoint, method}``: a histogram (``_bucket{le}``,
  ``_sum``, ``_count``) of the seconds from a request's arrival to the end of its answer.

``endpoint`` is one of the service's routes, or ``other`` for any path it does not serve: a
label per requested path would let any client grow the service's memory and the scrape without
bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["RequestMetrics", "MetricsMiddleware", "CONTENT_TYPE", "BUCKETS"]

#: Prometheus's text format, version 0.0.4
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: histogram bucket bounds, seconds: a BM25 request takes milliseconds, an LM compressor's seconds
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(float(value))


class RequestMetrics:
    """Counts and latency histograms of the service's requests, rendered as Prometheus text."""

    def __init__(self, endpoints: frozenset[str], buckets: tuple[float, ...] = BUCKETS) -> None:
        self.endpoints, self.buckets = endpoints, buckets
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}
        self._histograms: dict[tuple[str, str], list[float]] = {}  # per bucket counts, then sum, then count

    def endpoint(self, path: str) -> str:
        if path in self.endpoints:
            return path
        if path.startswith("/docs/"):  # the Swagger UI's assets
            return "/docs"
        return "other"

    def observe(self, path: str, method: str, status: int, seconds: float) -> None:
        endpoint = self.endpoint(path)
        method = method if method in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS") else "other"
        with self._lock:
            key = (endpoint, method, str(status))
            self._counts[key] = self._counts.get(key, 0) + 1
            row = self._histograms.setdefault((endpoint, method), [0.0] * (len(self.buckets) + 2))
            for i, bound in enumerate(self.buckets):
                if seconds <= bound:
                    row[i] += 1
            row[-2] += seconds
            row[-1] += 1

    def render(self) -> str:
        with self._lock:
            counts, histograms = dict(self._counts), {k: list(v) for k, v in self._histograms.items()}
        lines = ["# HELP ragsift_http_requests_total HTTP requests answered, by endpoint, method and status.",
                 "# TYPE ragsift_http_requests_total counter"]
        for (endpoint, method, status), n in sorted(counts.items()):
            lines.append(f'ragsift_http_requests_total{{endpoint="{_label(endpoint)}",method="{method}",status="{status}"}} {n}')
        name = "ragsift_http_request_duration_seconds"
        lines += [f"# HELP {name} Seconds from a request's arrival to the end of its answer.", f"# TYPE {name} histogram"]
        for (endpoint, method), row in sorted(histograms.items()):
            labels = f'endpoint="{_label(endpoint)}",method="{method}"'
            bounds = (*self.buckets, float("inf"))
            for bound, observed in zip(bounds, (*row[:len(self.buckets)], row[-1]), strict=True):
                lines.append(f'{name}_bucket{{{labels},le="{_number(bound)}"}} {int(observed)}')
            lines.append(f"{name}_sum{{{labels}}} {_number(row[-2])}")
            lines.append(f"{name}_count{{{labels}}} {int(row[-1])}")
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    """ASGI middleware: every HTTP request's status and duration into ``metrics``."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], metrics: RequestMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # no answer started: 499 (nginx's "client closed request") when the app returned without one
        # (BodyLimit does for a client that left mid-body), 500 when it raised (the server answers that)
        started, status = time.perf_counter(), 499
        recorded = False

        def record() -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                self.metrics.observe(scope.get("path", ""), scope.get("method", ""), status, time.perf_counter() - started)

        async def counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                record()

        try:
            await self.app(scope, receive, counted)
        except BaseException:
            if not recorded and status == 499:
                status = 500
            raise
        finally:
            record()  # counted once, whatever happened
