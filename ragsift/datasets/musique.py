"""The official MuSiQue JSONL: 2-4 hop questions over 20 paragraphs marked ``is_supporting``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import StrictBool, StrictInt, StrictStr

from ragsift.datasets.file_loader import JsonRecordsLoader, head_has_keys
from ragsift.datasets.json_records import Record, RecordModel, parse_record
from ragsift.types import Document, Example, make_example

__all__ = ["MuSiQueLoader", "MuSiQueRecord", "musique_hops"]


class MuSiQueParagraph(RecordModel):
    idx: StrictInt
    title: StrictStr = ""
    paragraph_text: StrictStr
    is_supporting: StrictBool = False


class MuSiQueStep(RecordModel):
    id: StrictInt | StrictStr | None = None
    question: StrictStr = ""
    answer: StrictStr = ""
    paragraph_support_idx: StrictInt | None = None


class MuSiQueRecord(RecordModel):
    """One question of the official MuSiQue files (MuSiQue-Ans and MuSiQue-Full)."""

    id: StrictStr
    paragraphs: list[MuSiQueParagraph]
    question: StrictStr
    question_decomposition: list[MuSiQueStep] = []
    answer: StrictStr = ""
    answer_aliases: list[StrictStr] = []
    answerable: StrictBool = True


def musique_hops(question_id: str) -> tuple[str | None, int | None]:
    """The id's prefix (``"3hop1"`` of ``"3hop1__1234_5678_90"``: the hop count and the
    composition's shape) and its number of hops; ``(None, None)`` for another id."""
    found = re.match(r"(([1-9])hop\w*?)__", question_id)
    return (found.group(1), int(found.group(2))) if found else (None, None)


class MuSiQueLoader(JsonRecordsLoader):
    """Loads MuSiQue JSONL (Trivedi et al., 2022; also a JSON array of the same records).

    Each paragraph becomes a :class:`~ragsift.types.Document` (id: its ``idx``; no sentence
    boundaries: the run's splitter finds them). The gold answers are ``answer`` followed by its
    ``answer_aliases`` (deduplicated): EM and F1 take the best of them. The labels are
    paragraph-level, as IRCoT's are (:class:`~ragsift.datasets.ircot.IRCoTLoader`):
    ``Example.evidence`` is ``None``, each document's ``metadata["is_supporting"]`` is set and
    ``metadata["supporting_docs"]`` lists the supporting documents' indices. ``metadata`` also
    holds ``type`` (the id's prefix, e.g. ``2hop``, ``3hop1``), ``hops``, ``answerable`` and the
    ``decomposition`` (sub-questions with their answers and supporting paragraph).
    """

    format_name = "MuSiQue JSONL"
    records_name = "MuSiQue questions"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_has_keys(head, "paragraphs", "paragraph_text") and not head_has_keys(head, "qas")

    @staticmethod
    def to_example(record: Record) -> Example:
        """One MuSiQue record -> an :class:`Example`."""
        raw = parse_record(MuSiQueRecord, record, "MuSiQue question")
        documents = []
        supporting = []
        for i, p in enumerate(raw.paragraphs):
            meta: dict[str, Any] = {"is_supporting": p.is_supporting, "idx": p.idx}
            documents.append(Document(title=p.title, text=p.paragraph_text, id=str(p.idx), metadata=meta))
            if p.is_supporting:
                supporting.append(i)
        kind, hops = musique_hops(raw.id)
        return make_example(
            id=raw.id,
            question=raw.question,
            answers=tuple(dict.fromkeys(a for a in (raw.answer, *raw.answer_aliases) if a)),
            documents=tuple(documents),
            evidence=None,
            metadata={
                "type": kind,
                "hops": hops,
                "answerable": raw.answerable,
                "supporting_docs": supporting,
                "decomposition": [step.model_dump() for step in raw.question_decomposition],
            },
        )
