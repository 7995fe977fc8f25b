"""Shards of a run: ``ragsift evaluate --shard i/N`` evaluates a deterministic 1/N of the examples.

The rule is **position modulo N**: the example at position ``p`` of the run (0-based, in the data
file's order, after ``limit``) belongs to shard ``p % N``. Shards are therefore balanced (their
sizes differ by at most one), need nothing but the data file to be recomputed, and do not
depend on the other shards. Per-compressor ``limits`` and ``reader_limit`` keep counting the
positions of the whole run, so N shards together evaluate exactly what one unsharded run would.
``ragsift merge`` (:mod:`ragsift.evaluation.run.merge`) puts the shards back together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ragsift.errors import ConfigError

__all__ = ["Shard", "parse_shard", "select_shard"]

T = TypeVar("T")
_PATTERN = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0 <= index < count)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(f"--shard {self.index}/{self.count}: expected i/N with N >= 1 and 0 <= i < N "
                              f"(shards are numbered from 0: 0/{max(self.count, 1)} ... "
                              f"{max(self.count, 1) - 1}/{max(self.count, 1)}).")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, position: int) -> bool:
        return position % self.count == self.index

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count}

    def check_not_empty(self, examples: int, data: Path | str) -> None:
        """Refuse a shard with no example (more shards than examples)."""
        if self.index >= examples:
            raise ConfigError(f"--shard {self}: this shard holds no example: {data} gives {examples} example(s) "
                              f"(after the limit), so at most {examples} shard(s) can be used.")


def parse_shard(text: str) -> Shard:
    """``"i/N"`` -> :class:`Shard`; anything else is a :class:`ConfigError` saying what is expected."""
    match = _PATTERN.fullmatch(text)
    if match is None:
        raise ConfigError(f"--shard '{text}': expected i/N, two whole numbers with 0 <= i < N (e.g. --shard 0/4).")
    return Shard(int(match.group(1)), int(match.group(2)))


def select_shard(items: Sequence[T], shard: Shard) -> list[T]:
    """The items at positions ``p`` with ``p % shard.count == shard.index``, in order."""
    return [item for position, item in enumerate(items) if shard.owns(position)]
