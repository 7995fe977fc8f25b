"""Requests that arrive together are compressed together: a small asyncio batching queue.

Each request's examples wait in the queue; one worker takes the waiting requests (whole requests,
up to ``max_batch_examples`` examples, or one larger request alone) as soon as that many are
waiting or ``max_wait_seconds`` after the first arrived, and runs them as ONE call of the batch
function in a single worker thread. The models are therefore used by one thread at a time, and a
compressor that batches across examples in ``compress_many`` gets whole batches. When a batch
fails, its requests run again one by one, so only the request that caused the failure gets it.
A batch function that raises ``SystemExit``, ``KeyboardInterrupt`` or any other
``BaseException`` fails its request the same way (as :class:`BatchAborted`): it never reaches
the event loop, where it would stop the whole service.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["BatchQueue", "BatchReport", "BatchAborted"]

T = TypeVar("T")
R = TypeVar("R")


class BatchAborted(RuntimeError):
    """The batch function raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``, ...); the original is its ``__cause__``."""


@dataclass(frozen=True)
class BatchReport:
    examples: int
    requests: int
    queue_seconds: float
    compress_seconds: float


@dataclass
class _Request(Generic[T, R]):
    items: Sequence[T]
    future: asyncio.Future[tuple[list[R], BatchReport]]
    arrived: float = field(default_factory=time.perf_counter)


class BatchQueue(Generic[T, R]):
    """``await queue.submit(items)`` -> (one result per item, how it was batched)."""

    def __init__(self, run: Callable[[list[T]], list[R]], max_batch_examples: int = 32, max_wait_seconds: float = 0.005) -> None:
        if max_batch_examples < 1 or max_wait_seconds < 0:
            raise ValueError("max_batch_examples must be >= 1 and max_wait_seconds >= 0")
        self.run, self.max_batch, self.max_wait = run, max_batch_examples, max_wait_seconds
        self._pending: deque[_Request[T, R]] = deque()
        self._arrived: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        #: batches run so far, and the largest (examples)
        self.batches = 0
        self.largest = 0

    @property
    def waiting(self) -> int:
        return len(self._pending)

    async def start(self) -> None:
        self._arrived = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragsift-compress")
        self._worker = asyncio.create_task(self._serve(), name="ragsift-batch-queue")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for request in self._pending:
            if not request.future.done():
                request.future.set_exception(RuntimeError("the service is shutting down"))
        self._pending.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def submit(self, items: Sequence[T]) -> tuple[list[R], BatchReport]:
        if self._arrived is None:
            raise RuntimeError("BatchQueue.submit before start()")
        request: _Request[T, R] = _Request(items, asyncio.get_running_loop().create_future())
        self._pending.append(request)
        self._arrived.set()
        return await request.future

    # -- the worker ---------------------------------------------------------------------------
    def _take(self) -> list[_Request[T, R]]:
        """Whole requests from the front, up to max_batch examples (at least one request)."""
        batch = [self._pending.popleft()]
        size = len(batch[0].items)
        while self._pending and size + len(self._pending[0].items) <= self.max_batch:
            size += len(self._pending[0].items)
            batch.append(self._pending.popleft())
        return batch

    def _full(self) -> bool:
        return sum(len(r.items) for r in self._pending) >= self.max_batch

    async def _serve(self) -> None:
        assert self._arrived is not None
        loop = asyncio.get_running_loop()
        while True:
            while not self._pending:
                self._arrived.clear()
                await self._arrived.wait()
            deadline = loop.time() + self.max_wait
            while not self._full() and (remaining := deadline - loop.time()) > 0:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), remaining)
                except TimeoutError:
                    break
            batch = [r for r in self._take() if not r.future.done()]  # a client that left is not served
            if not batch:
                continue
            started = time.perf_counter()
            outcomes = await loop.run_in_executor(self._executor, self._run_batch, batch)
            seconds = time.perf_counter() - started
            examples = sum(len(r.items) for r in batch)
            self.batches += 1
            self.largest = max(self.largest, examples)
            for request, outcome in zip(batch, outcomes, strict=True):
                if request.future.done():
                    continue
                if isinstance(outcome, BaseException):
                    request.future.set_exception(outcome)
                else:
                    report = BatchReport(examples, len(batch), started - request.arrived, seconds)
                    request.future.set_result((outcome, report))

    def _run_batch(self, batch: list[_Request[T, R]]) -> list[list[R] | BaseException]:
        """In the worker thread: one call for the whole batch; on failure, each request alone."""
        items = [item for request in batch for item in request.items]
        try:
            results = self._call(items)
        except Exception as exc:
            if len(batch) == 1:
                return [exc]
        else:
            out: list[list[R] | BaseException] = []
            start = 0
            for request in batch:
                out.append(results[start : start + len(request.items)])
                start += len(request.items)
            return out
        outcomes: list[list[R] | BaseException] = []
        for request in batch:
            try:
                outcomes.append(self._call(list(request.items)))
            except Exception as exc:
                outcomes.append(exc)
        return outcomes

    def _call(self, items: list[T]) -> list[R]:
        try:
            results = list(self.run(items))
        except Exception:
            raise
        except BaseException as exc:  # in this worker thread nothing cancels: every one is the batch function's
            raise BatchAborted(f"the batch function raised {type(exc).__name__}({exc})") from exc
        if len(results) != len(items):
            raise RuntimeError(f"the batch function returned {len(results)} results for {len(items)} items")
        return results

    def describe(self) -> dict[str, Any]:
        return {"max_batch_examples": self.max_batch, "max_wait_ms": self.max_wait * 1000, "waiting_requests": self.waiting,
                "batches": self.batches, "largest_batch": self.largest}
