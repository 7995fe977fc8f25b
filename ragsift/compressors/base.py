"""The compressor: an example -> a compression result."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator

from ragsift.plugin import Plugin
from ragsift.types import CompressionResult, Example

__all__ = ["Compressor"]


class Compressor(Plugin):
    """Compresses the retrieved documents of an example."""

    @abstractmethod
    def compress(self, example: Example) -> CompressionResult:
        """Compress one example."""

    def compress_many(self, examples: Iterable[Example]) -> Iterator[CompressionResult]:
        """Compress examples one after another (subclasses may batch)."""
        for example in examples:
            yield self.compress(example)
