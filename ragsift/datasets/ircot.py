"""IRCoT's JSONL: questions with paragraphs marked ``is_supporting`` (paragraph-level labels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import StrictBool, StrictStr

from ragsift.datasets.file_loader import JsonRecordsLoader, head_has_keys
from ragsift.datasets.json_records import Record, RecordModel, parse_record
from ragsift.types import Document, Example, make_example, sentence_spans_from_list

__all__ = ["IRCoTLoader", "IRCoTRecord", "split_ircot_paragraph"]


class IRCoTAnswer(RecordModel):
    spans: list[StrictStr] = []
    number: StrictStr | int | float = ""


class IRCoTContext(RecordModel):
    id: StrictStr | int | None = None
    title: StrictStr = ""
    paragraph_text: StrictStr
    is_supporting: StrictBool = False


class IRCoTRecord(RecordModel):
    """One question of IRCoT's processed HotpotQA / 2Wiki / MuSiQue files."""

    question_id: StrictStr | int
    question_text: StrictStr
    answers_objects: list[IRCoTAnswer] = []
    contexts: list[IRCoTContext] = []


def split_ircot_paragraph(paragraph_text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """IRCoT joined HotpotQA's sentences with two spaces: split on them and re-join the sentences
    as the HotpotQA loader does. Returns (text, sentence spans)."""
    parts = [part for part in paragraph_text.split("  ") if part.strip()]
    return sentence_spans_from_list(parts)


class IRCoTLoader(JsonRecordsLoader):
    """Loads IRCoT JSONL (also accepts a JSON array of the same records).

    Sentences are recovered by splitting ``paragraph_text`` on two spaces and stored as
    ``Document.sentence_spans``. The labels are paragraph-level only, so ``Example.evidence`` is
    ``None``; ``metadata["supporting_docs"]`` lists the indices of the supporting documents.
    """

    format_name = "IRCoT JSONL"
    records_name = "IRCoT questions"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_has_keys(head, "question_text", "contexts")

    @staticmethod
    def to_example(record: Record) -> Example:
        """One IRCoT record -> an :class:`Example`."""
        raw = parse_record(IRCoTRecord, record, "IRCoT question")
        answers: list[str] = []
        for obj in raw.answers_objects:
            found = list(obj.spans) or ([str(obj.number)] if str(obj.number) else [])
            answers.extend(a for a in found if a not in answers)
        documents = []
        supporting = []
        for i, ctx in enumerate(raw.contexts):
            text, spans = split_ircot_paragraph(ctx.paragraph_text)
            meta: dict[str, Any] = {"is_supporting": ctx.is_supporting}
            if ctx.id is not None:
                meta["context_id"] = str(ctx.id)
            documents.append(Document(title=ctx.title, text=text, id=ctx.title, sentence_spans=spans, metadata=meta))
            if ctx.is_supporting:
                supporting.append(i)
        return make_example(
            id=str(raw.question_id),
            question=raw.question_text,
            answers=tuple(answers),
            documents=tuple(documents),
            evidence=None,
            metadata={"supporting_docs": supporting},
        )
