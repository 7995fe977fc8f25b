"""ECoRAG's output: kept sentences in rank order, each prefixed with its document's title."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ragsift.assemblers.base import Assembler
from ragsift.plugin import Params
from ragsift.types import Document, Sentence

__all__ = ["RankOrderAssembler"]


class RankOrderParams(Params):
    title_prefix: bool = True
    #: "rank" (the selector's order) or "original" (document, then sentence order)
    order: Literal["rank", "original"] = "rank"
    #: how the title is put before each sentence
    prefix_template: str = "{title}: "
    separator: str = "\n"


class RankOrderAssembler(Assembler):
    """One sentence per line, ``"{title}: {sentence}"``, best first."""

    Params = RankOrderParams

    def assemble(self, documents: Sequence[Document], sentences: Sequence[Sentence], kept: Sequence[int]) -> str:
        order = list(kept)
        if self.params.order == "original":
            order.sort(key=lambda j: (sentences[j].doc_index, sentences[j].index))
        lines = []
        for i in order:
            s = sentences[i]
            prefix = self.params.prefix_template.format(title=documents[s.doc_index].title) if self.params.title_prefix else ""
            lines.append(prefix + s.text)
        return self.params.separator.join(lines)
