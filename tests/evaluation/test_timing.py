"""Timed compression and reading: repeats are averaged, the first outputs are kept."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragsift.evaluation.run.timing import synchronize, timed_compress, timed_read
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.types import CompressionResult, Example


class _CountingCompressor:
    def __init__(self) -> None:
        self.calls = 0

    def compress(self, example: Example) -> CompressionResult:
        self.calls += 1
        return CompressionResult(example.id, [], [], [], f"run {self.calls}", timings={"score": float(self.calls)})


class _ScriptedReader(Reader):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self.calls += 1
        return [ReaderAnswer(f"{q} #{self.calls}", 1, 1, float(self.calls)) for q in questions]


def test_compress_repeats_average_the_timings() -> None:
    compressor = _CountingCompressor()
    result = timed_compress(compressor, Example("e", "q", (), ()), repeats=3)
    assert compressor.calls == 3
    assert result.text == "run 1"  # the first run's output
    assert result.timings["score"] == pytest.approx(2.0)  # mean of 1, 2, 3
    assert result.timings["compress"] > 0


def test_read_repeats_average_the_seconds() -> None:
    reader = _ScriptedReader()
    answers, seconds = timed_read(reader, ["a", "b"], ["", ""], repeats=4)
    assert reader.calls == 4
    assert [a.text for a in answers] == ["a #1", "b #1"]
    assert seconds == [pytest.approx(2.5), pytest.approx(2.5)]


def test_synchronize_does_not_initialise_cuda() -> None:
    import torch

    before = torch.cuda.is_initialized()
    synchronize()
    assert torch.cuda.is_initialized() == before
