"""FlashRAG's dataset JSONL: ``{id, question, golden_answers, metadata}`` per line, with the
retrieved passages (``retrieval_result``, each ``contents = "title\\ntext"``) when a run saved them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, StrictStr

from ragsift.datasets.file_loader import JsonRecordsLoader, LoaderParams, head_has_keys
from ragsift.datasets.json_records import Record, RecordModel, parse_record
from ragsift.types import Document, Example, make_example

__all__ = ["FlashRAGLoader", "FlashRAGRecord", "split_contents"]


class FlashRAGPassage(RecordModel):
    id: StrictStr | int | None = None
    contents: StrictStr
    score: float | None = None


class FlashRAGOutput(RecordModel):
    retrieval_result: list[FlashRAGPassage] | None = None


class FlashRAGRecord(RecordModel):
    """One question of a FlashRAG dataset file (or of a saved FlashRAG run)."""

    id: StrictStr | int
    question: StrictStr
    golden_answers: list[StrictStr | int | float] = []
    metadata: dict[str, Any] = {}
    choices: list[Any] = []
    retrieval_result: list[FlashRAGPassage] | None = None
    output: FlashRAGOutput | None = None


class FlashRAGParams(LoaderParams):
    """``top_k``: passages kept per question (None: all); ``strip_title_quotes``: drop the
    double quotes some Wikipedia dumps put around titles (``"Aaron"``)."""

    top_k: int | None = Field(default=None, ge=1)
    strip_title_quotes: bool = True


def split_contents(contents: str, strip_quotes: bool = True) -> tuple[str, str]:
    """FlashRAG stores a passage as ``"title\\ntext"`` (``"\\ntext"`` without a title)."""
    title, newline, text = contents.partition("\n")
    if not newline:
        return "", contents
    title = title.strip()
    if strip_quotes and len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, text


class FlashRAGLoader(JsonRecordsLoader):
    """Loads FlashRAG JSONL (a JSON array of the same items also works).

    Documents come from ``retrieval_result`` (top level, or ``output.retrieval_result`` in a
    saved run); items without it have no documents. FlashRAG's own ``metadata`` is kept under
    ``metadata["flashrag"]``. No evidence labels (``evidence=None``).
    """

    Params = FlashRAGParams
    format_name = "FlashRAG JSONL"
    records_name = "FlashRAG items"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_has_keys(head, "question", "golden_answers")

    def to_example(self, record: Record) -> Example:
        """One FlashRAG item -> an :class:`Example`."""
        raw = parse_record(FlashRAGRecord, record, "FlashRAG item")
        passages = raw.retrieval_result
        if passages is None and raw.output is not None:
            passages = raw.output.retrieval_result
        documents = []
        for i, passage in enumerate((passages or [])[: self.params.top_k]):
            title, text = split_contents(passage.contents, self.params.strip_title_quotes)
            doc_id = str(passage.id) if passage.id is not None else str(i)
            documents.append(Document(title=title, text=text, id=doc_id, score=passage.score))
        metadata: dict[str, Any] = {"flashrag": dict(raw.metadata), "retrieved": len(passages or [])}
        if raw.choices:
            metadata["choices"] = list(raw.choices)
        return make_example(
            id=str(raw.id),
            question=raw.question,
            answers=tuple(str(a) for a in raw.golden_answers),
            documents=tuple(documents),
            evidence=None,
            metadata=metadata,
        )
