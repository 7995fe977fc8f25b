"""The compressor: an example -> a compression result."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ragsift.errors import UsageError
from ragsift.plugin import Plugin
from ragsift.types import CompressionResult, Example

__all__ = ["Compressor", "check_example"]


def check_example(example: object, owner: str = "compress") -> Example:
    """``example`` if it is an :class:`Example`, else a UsageError that says how to make one."""
    if not isinstance(example, Example):
        raise UsageError(
            f"{owner}: expected an Example; got {type(example).__name__} {_clip(example)}. Build one with "
            "ragsift.make_example(question, documents, answers) or load a dataset with ragsift.datasets.load_examples."
        )
    return example


def _clip(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Compressor(Plugin):
    """Compresses the retrieved documents of an example."""

    stage: ClassVar[str] = "compressor"

    @abstractmethod
    def compress(self, example: Example) -> CompressionResult:
        """Compress one example."""

    def compress_many(self, examples: Iterable[Example]) -> Iterator[CompressionResult]:
        """Compress examples one after another (subclasses may batch); the argument is checked
        at once, each example when its turn comes."""
        if isinstance(examples, (str, bytes, Example)) or not isinstance(examples, Iterable):
            raise UsageError(f"{type(self).__name__}.compress_many: expected an iterable of Examples; got "
                             f"{type(examples).__name__} {_clip(examples)}. To compress one example, call compress().")
        return (self.compress(example) for example in examples)
