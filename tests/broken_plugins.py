"""Plugins that break their stage's contract, and a way to run the real CLI with them
registered (``python -m broken_plugins ARGS`` = ``ragsift ARGS`` plus these plugins)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.hookspecs import hookimpl
from ragsift.scorers.base import Scorer
from ragsift.selectors.base import Selector
from ragsift.types import Example, Selection, Sentence


class OneShortScorer(Scorer):
    """Returns one score fewer than there are sentences."""

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        return np.zeros(max(len(sentences) - 1, 0))


class OutOfRangeSelector(Selector):
    """Keeps an index one past the last sentence."""

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        return Selection([len(sentences)])


class ExplodingCompressor(PipelineCompressor):
    """bm25 that divides by zero on every example after the second (an unexpected bug)."""

    default_stages = {"splitter": {"name": "sentencizer"}, "scorer": {"name": "bm25"},
                      "selector": {"name": "top-k", "k": 2}, "assembler": {"name": "original-order"}}
    calls = 0

    def compress(self, example: Example) -> Any:
        type(self).calls += 1
        if type(self).calls > 2:
            return 1 / 0
        return super().compress(example)


@hookimpl
def register_scorers(register: Any) -> None:
    register("one-short", OneShortScorer)


@hookimpl
def register_selectors(register: Any) -> None:
    register("out-of-range", OutOfRangeSelector)


@hookimpl
def register_compressors(register: Any) -> None:
    register("exploding", ExplodingCompressor)


def main(argv: list[str]) -> int:
    from ragsift.cli import main as ragsift_main
    from ragsift.registry import get_registry

    get_registry().add_plugin(sys.modules[__name__], source="broken_plugins")
    return ragsift_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
