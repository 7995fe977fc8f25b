"""A regular-expression splitter (FlashRAG's extractive refiner splits this way)."""

from __future__ import annotations

import re

from pydantic import field_validator

from ragsift.plugin import Params
from ragsift.splitters.base import Splitter

__all__ = ["RegexSplitter"]


class RegexParams(Params):
    #: a pattern matching the gaps between sentences
    pattern: str = r"(?<=[.!?])\s+"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc})") from None
        return value


class RegexSplitter(Splitter):
    """Splits at every match of ``pattern``."""

    Params = RegexParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._regex = re.compile(self.params.pattern)

    def spans(self, text: str) -> list[tuple[int, int]]:
        out, start = [], 0
        for match in self._regex.finditer(text):
            if match.end() == match.start():  # zero-width gaps would split inside words
                continue
            out.append((start, match.start()))
            start = match.end()
        out.append((start, len(text)))
        return out
