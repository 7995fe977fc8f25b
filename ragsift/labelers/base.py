"""The labeler stage: examples -> labelled training records for a scorer."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from ragsift.plugin import Plugin
from ragsift.types import Example, Sentence

__all__ = ["Labeler", "SentenceLabel"]


@dataclass(frozen=True, slots=True)
class SentenceLabel:
    """One training record: is ``sentence`` useful for ``query``, given its own document ``context``?"""

    example_id: str
    query: str
    context: str
    sentence: str
    label: bool
    kind: str

    @classmethod
    def of(cls, example: Example, sentence: Sentence, label: bool, kind: str, source: Example | None = None) -> SentenceLabel:
        """The record of ``sentence`` for ``example``'s question, its context the sentence's own document
        (of ``source``, default ``example``) as ``"{title}\n{text}"``."""
        doc = (source or example).documents[sentence.doc_index]
        return cls(example.id, example.question, f"{doc.title}\n{doc.text}", sentence.text, label, kind)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


class Labeler(Plugin):
    """Makes training data from examples with gold evidence."""

    stage: ClassVar[str] = "labeler"

    @abstractmethod
    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        """Labelled records, deterministic for a given seed and input order."""

    def report(self) -> dict[str, Any]:
        """What the last :meth:`label` run did beyond its records (model calls, time, skips)."""
        return {}
