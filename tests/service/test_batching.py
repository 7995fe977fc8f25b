"""The service's batching queue: requests that arrive together run as one call, whole requests
only, at most the batch size, each caller gets its own results, a failure stays with its request."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ragsift.service.batching import BatchAborted, BatchQueue


class Recorder:
    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[str] = set()
        self.fail_on = fail_on

    def __call__(self, items: list[str]) -> list[str]:
        self.calls.append(list(items))
        self.threads.add(threading.current_thread().name)
        if self.fail_on in items:
            raise ValueError(f"cannot take {self.fail_on}")
        return [item.upper() for item in items]


def _run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_requests_arriving_together_form_one_batch_and_get_their_own_results() -> None:
    run = Recorder()

    async def go():  # type: ignore[no-untyped-def]
        queue = BatchQueue(run, max_batch_examples=10, max_wait_seconds=0.2)
        await queue.start()
        try:
            return await asyncio.gather(queue.submit(["a", "b"]), queue.submit(["c"]), queue.submit(["d", "e", "f"]))
        finally:
            await queue.stop()

    answers = _run(go())
    assert [results for results, _ in answers] == [["A", "B"], ["C"], ["D", "E", "F"]]
    assert run.calls == [["a", "b", "c", "d", "e", "f"]]
    assert all(report.examples == 6 and report.requests == 3 for _, report in answers)
    assert len(run.threads) == 1 and next(iter(run.threads)).startswith("ragsift-compress")


def test_batches_hold_whole_requests_up_to_the_limit() -> None:
    run = Recorder()

    async def go():  # type: ignore[no-untyped-def]
        queue = BatchQueue(run, max_batch_examples=3, max_wait_seconds=0.2)
        await queue.start()
        try:
            return await asyncio.gather(*(queue.submit(items) for items in (["a", "b"], ["c", "d"], ["e"], ["f", "g", "h", "i"])))
        finally:
            await queue.stop()

    answers = _run(go())
    assert [r for r, _ in answers] == [["A", "B"], ["C", "D"], ["E"], ["F", "G", "H", "I"]]
    assert run.calls == [["a", "b"], ["c", "d", "e"], ["f", "g", "h", "i"]]  # a request larger than the limit runs alone


def test_a_failing_request_fails_alone() -> None:
    run = Recorder(fail_on="bad")

    async def go():  # type: ignore[no-untyped-def]
        queue = BatchQueue(run, max_batch_examples=10, max_wait_seconds=0.2)
        await queue.start()
        try:
            return await asyncio.gather(queue.submit(["a"]), queue.submit(["bad", "b"]), queue.submit(["c"]),
                                        return_exceptions=True)
        finally:
            await queue.stop()

    first, second, third = _run(go())
    assert first[0] == ["A"] and third[0] == ["C"]
    assert isinstance(second, ValueError) and "cannot take bad" in str(second)
    assert run.calls[0] == ["a", "bad", "b", "c"]  # the batch, then each request alone
    assert sorted(map(tuple, run.calls[1:])) == [("a",), ("bad", "b"), ("c",)]


def test_a_lone_request_waits_at_most_max_wait() -> None:
    run = Recorder()

    async def go():  # type: ignore[no-untyped-def]
        queue = BatchQueue(run, max_batch_examples=100, max_wait_seconds=0.05)
        await queue.start()
        try:
            return await queue.submit(["x"])
        finally:
            await queue.stop()

    results, report = _run(go())
    assert results == ["X"] and report.requests == 1
    assert 0.04 <= report.queue_seconds < 5


def test_bad_settings_and_use_before_start_are_refused() -> None:
    with pytest.raises(ValueError):
        BatchQueue(Recorder(), max_batch_examples=0)
    with pytest.raises(RuntimeError, match="before start"):
        _run(BatchQueue(Recorder()).submit(["a"]))


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()])
def test_a_base_exception_fails_its_request_not_the_queue(raised: BaseException) -> None:
    def run(items: list[str]) -> list[str]:
        if "bad" in items:
            raise raised
        return [item.upper() for item in items]

    async def go():  # type: ignore[no-untyped-def]
        queue = BatchQueue(run, max_batch_examples=10, max_wait_seconds=0.2)
        await queue.start()
        try:
            together = await asyncio.gather(queue.submit(["a"]), queue.submit(["bad"]), return_exceptions=True)
            later = await queue.submit(["c"])  # the worker is still serving
            return together, later
        finally:
            await queue.stop()

    (first, second), later = _run(go())
    assert first[0] == ["A"] and later[0] == ["C"]
    assert isinstance(second, BatchAborted) and second.__cause__ is raised
    assert type(raised).__name__ in str(second)
