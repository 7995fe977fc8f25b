"""The ``none`` compressor: the retrieved documents, unchanged."""

from __future__ import annotations

import time

from ragsift.compressors.base import Compressor, check_example
from ragsift.plugin import Params
from ragsift.types import CompressionResult, Example, Sentence

__all__ = ["NoCompression"]


class NoCompressionParams(Params):
    #: put each document's title on a line above its text
    title: bool = True
    document_separator: str = "\n\n"


class NoCompression(Compressor):
    """Every document kept whole; each document is recorded as one unit (score 1, kept)."""

    Params = NoCompressionParams

    def compress(self, example: Example) -> CompressionResult:
        check_example(example, type(self).__name__)
        t = time.perf_counter()
        units = [Sentence(i, 0, 0, len(d.text), d.text) for i, d in enumerate(example.documents) if d.text]
        blocks = [
            f"{example.documents[u.doc_index].title}\n{u.text}" if self.params.title else u.text for u in units
        ]
        text = self.params.document_separator.join(blocks)
        return CompressionResult(
            example_id=example.id,
            sentences=units,
            scores=[1.0] * len(units),
            kept=list(range(len(units))),
            text=text,
            timings={"assemble": time.perf_counter() - t},
        )
