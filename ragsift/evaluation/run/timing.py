"""Timed compression and reading: warm-up runs, repeats, and CUDA synchronisation.

Stage timings come from ``CompressionResult.timings`` (split, score, select, assemble); the
runner adds ``compress`` (the whole ``compress()`` call) and ``read``. With ``repeats`` > 1 the
same example is processed that many times and every timing is the mean over the repeats; the
outputs of the first repeat are the ones recorded. On CUDA, ``torch.cuda.synchronize()`` runs
before and after each timed call so that queued kernels are counted where they belong.

Cached work counts as long as it took when it was measured: a score-cache hit reports the scoring
seconds stored with the scores (``timings["score"]``, and ``compress`` includes them; the cache's
own hashing and file access are left out, on hits and misses alike), and a
cached reader answer reports the reading seconds stored with it, so a sweep's points and a rerun
report the latency of the system they describe, not of the cache. Records say which were hits
(``info.score_cache`` and ``reader.cached``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.types import CompressionResult, Example

__all__ = ["synchronize", "timed_compress", "timed_read"]


def synchronize() -> None:
    """Wait for queued CUDA work, when torch is loaded and CUDA is in use (no-op otherwise)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _mean(dicts: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = {k for d in dicts for k in d}
    return {k: sum(d.get(k, 0.0) for d in dicts) / len(dicts) for k in sorted(keys)}


def _replayed(result: CompressionResult) -> float:
    """Seconds to add to the measured ``compress`` time so that it counts the scorer's own time
    (``info["score_cache"]``): the stored scoring time of a cache hit, and never the cache's own
    hashing and file access."""
    call = result.info.get("score_cache")
    if not isinstance(call, dict):
        return 0.0
    return float(call["seconds"]) - float(call["measured_seconds"])


def timed_compress(compressor: Any, example: Example, repeats: int = 1) -> CompressionResult:
    """Compress ``example`` ``repeats`` times; the first result with mean timings (+ ``compress``)."""
    first: CompressionResult | None = None
    runs: list[dict[str, float]] = []
    for _ in range(repeats):
        synchronize()
        t = time.perf_counter()
        result = compressor.compress(example)
        synchronize()
        total = time.perf_counter() - t + _replayed(result)
        runs.append({**{k: float(v) for k, v in result.timings.items()}, "compress": total})
        if first is None:
            first = result
    assert first is not None
    first.timings = _mean(runs)
    return first


def timed_read(
    reader: Reader, questions: Sequence[str], contexts: Sequence[str], repeats: int = 1
) -> tuple[list[ReaderAnswer], list[float]]:
    """Answers of the first repeat and, per question, the mean reading seconds over the repeats."""
    first: list[ReaderAnswer] | None = None
    seconds = [0.0] * len(questions)
    for _ in range(repeats):
        synchronize()
        answers = reader.answer_many(questions, contexts)
        synchronize()
        for i, answer in enumerate(answers):
            seconds[i] += answer.seconds / repeats
        if first is None:
            first = answers
    assert first is not None
    return first, seconds
