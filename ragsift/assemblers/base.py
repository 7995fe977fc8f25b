"""The assembler stage: kept sentences -> the context string handed to the reader."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from ragsift.plugin import Plugin
from ragsift.types import Document, Sentence

__all__ = ["Assembler"]


class Assembler(Plugin):
    """Builds the compressed context from the kept sentences."""

    stage: ClassVar[str] = "assembler"

    @abstractmethod
    def assemble(self, documents: Sequence[Document], sentences: Sequence[Sentence], kept: Sequence[int]) -> str:
        """``kept`` are indices into ``sentences`` in the selector's priority order."""
