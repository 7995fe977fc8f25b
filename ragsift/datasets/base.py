"""The dataset-loader stage: a file -> examples."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from ragsift.plugin import Plugin
from ragsift.types import Example

__all__ = ["DatasetLoader"]


class DatasetLoader(Plugin):
    """Reads one file format. Malformed records raise ``DataFormatError`` naming file and line."""

    stage: ClassVar[str] = "dataset"

    @abstractmethod
    def load(self, path: str | Path) -> Iterator[Example]:
        """Examples of the file, in file order, streamed where the format allows."""

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        """Whether ``path`` (whose first characters are ``head``) looks like this format."""
        return False
