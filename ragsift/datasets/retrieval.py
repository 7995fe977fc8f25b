"""The retrieval exchange format used by DPR outputs, FiD, CompAct and EXIT:
``{question, answers, ctxs: [{title, text, score, id?, has_answer?}]}`` per question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, StrictStr

from ragsift.datasets.file_loader import JsonRecordsLoader, LoaderParams, head_has_keys
from ragsift.datasets.json_records import Record, RecordModel, parse_record
from ragsift.types import Document, Example, make_example

__all__ = ["RetrievalLoader", "RetrievalRecord", "RetrievedContext"]


class RetrievedContext(RecordModel):
    title: StrictStr = ""
    text: StrictStr
    score: float | None = None  # numeric strings ("80.5", as some tools write) are accepted
    id: StrictStr | int | None = None
    has_answer: StrictBool | None = None


class RetrievalRecord(RecordModel):
    """One question with its retrieved passages."""

    question: StrictStr
    answers: list[StrictStr] | StrictStr = []
    ctxs: list[RetrievedContext]
    id: StrictStr | int | None = None
    question_id: StrictStr | int | None = Field(default=None)
    underscore_id: StrictStr | int | None = Field(default=None, alias="_id")


class RetrievalParams(LoaderParams):
    """``top_k``: documents kept per question, in file order (None: all)."""

    top_k: int | None = Field(default=None, ge=1)


class RetrievalLoader(JsonRecordsLoader):
    """Loads retrieval results as a JSON array or JSONL.

    Documents keep the file's order and scores. When contexts carry ``has_answer``,
    ``metadata["answer_docs"]`` lists the indices of those that contain an answer. There are no
    evidence labels (``evidence=None``).
    """

    Params = RetrievalParams
    format_name = "retrieval JSON/JSONL ({question, answers, ctxs})"
    records_name = "questions with retrieved contexts"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_has_keys(head, "question", "ctxs")

    def to_example(self, record: Record) -> Example:
        """One record -> an :class:`Example`."""
        raw = parse_record(RetrievalRecord, record, "retrieval record ({question, answers, ctxs})")
        ctxs = raw.ctxs[: self.params.top_k]
        documents = []
        for i, ctx in enumerate(ctxs):
            meta: dict[str, Any] = {} if ctx.has_answer is None else {"has_answer": ctx.has_answer}
            doc_id = str(ctx.id) if ctx.id is not None else f"{i}"
            documents.append(Document(title=ctx.title, text=ctx.text, id=doc_id, score=ctx.score, metadata=meta))
        metadata: dict[str, Any] = {"retrieved": len(raw.ctxs)}
        if any(ctx.has_answer is not None for ctx in ctxs):
            metadata["answer_docs"] = [i for i, ctx in enumerate(ctxs) if ctx.has_answer]
        qid = next((v for v in (raw.id, raw.underscore_id, raw.question_id) if v is not None), record.index)
        answers = (raw.answers,) if isinstance(raw.answers, str) else tuple(raw.answers)
        return make_example(
            id=str(qid),
            question=raw.question,
            answers=answers,
            documents=tuple(documents),
            evidence=None,
            metadata=metadata,
        )
