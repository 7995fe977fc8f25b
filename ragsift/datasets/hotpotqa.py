"""The official HotpotQA JSON: a JSON array of questions with sentence-level supporting facts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, StrictInt, StrictStr

from ragsift.datasets.file_loader import FileLoader, head_has_keys, head_starts_with
from ragsift.datasets.json_records import Record, RecordModel, iter_json_array, parse_record
from ragsift.types import Document, EvidenceSpan, Example, make_example, sentence_spans_from_list

__all__ = ["HotpotQALoader", "HotpotQARecord", "context_example"]


class HotpotQARecord(RecordModel):
    """One question of the official HotpotQA files (distractor or fullwiki setting)."""

    id: StrictStr = Field(alias="_id")
    question: StrictStr
    answer: StrictStr = ""
    type: StrictStr | None = None
    level: StrictStr | None = None
    supporting_facts: list[tuple[StrictStr, StrictInt]] = []
    context: list[tuple[StrictStr, list[StrictStr]]]


class HotpotQALoader(FileLoader):
    """Loads the official HotpotQA JSON.

    Each context paragraph becomes a :class:`Document` whose text is its sentence array joined
    by :func:`sentence_spans_from_list`, with ``sentence_spans`` kept so the ``presplit``
    splitter reproduces HotpotQA's sentences exactly. Gold evidence is the span of each
    supporting-fact sentence. A supporting fact naming a missing title or sentence (or an empty
    sentence) is dropped and counted in ``metadata["dropped_supporting_facts"]``. Test files
    without answers or supporting facts load with ``answers=()`` and ``evidence=None``.
    """

    format_name = "HotpotQA JSON"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return (
            head_starts_with(head, "[")
            and head_has_keys(head, "_id", "context")
            and not head_has_keys(head, "golden_answers")  # a saved FlashRAG run of HotpotQA
            and not head_has_keys(head, "evidences")  # 2WikiMultihopQA (its own loader)
        )

    def read(self, path: Path) -> Iterator[Example]:
        for record in iter_json_array(path, "HotpotQA questions"):
            yield self.to_example(record)

    @staticmethod
    def to_example(record: Record) -> Example:
        """One HotpotQA record -> an :class:`Example`."""
        raw = parse_record(HotpotQARecord, record, "HotpotQA question")
        return context_example(raw.id, raw.question, (raw.answer,) if raw.answer else (), raw.context,
                               raw.supporting_facts, has_labels=isinstance(record.value, dict) and "supporting_facts" in record.value,
                               metadata={"type": raw.type, "level": raw.level})


def context_example(id: str, question: str, answers: tuple[str, ...], context: Sequence[tuple[str, Sequence[str]]],
                    supporting_facts: Sequence[tuple[str, int]], *, has_labels: bool,
                    metadata: Mapping[str, Any]) -> Example:
    """An :class:`Example` from HotpotQA's shape (shared by HotpotQA and 2WikiMultihopQA): a
    ``context`` of ``(title, sentences)`` paragraphs and ``[title, sentence index]`` supporting
    facts (rules: :class:`HotpotQALoader`). ``metadata`` is extended with the supporting facts."""
    documents: list[Document] = []
    by_title: dict[str, int] = {}
    for title, sentences in context:
        text, spans = sentence_spans_from_list(sentences)
        by_title.setdefault(title, len(documents))
        documents.append(Document(title=title, text=text, id=title, sentence_spans=spans))
    evidence: list[EvidenceSpan] = []
    dropped: list[tuple[str, int]] = []
    for title, sent_id in supporting_facts:
        doc_index = by_title.get(title)
        doc_spans = documents[doc_index].sentence_spans if doc_index is not None else None
        if (doc_index is None or doc_spans is None or not 0 <= sent_id < len(doc_spans)
                or doc_spans[sent_id][0] == doc_spans[sent_id][1]):  # no such sentence, or an empty one: nothing to select
            dropped.append((title, sent_id))
            continue
        span = EvidenceSpan(doc_index, *doc_spans[sent_id])
        if span not in evidence:
            evidence.append(span)
    meta = {
        **metadata,
        "supporting_facts": [list(sf) for sf in supporting_facts],
        "dropped_supporting_facts": len(dropped),
    }
    if dropped:
        meta["dropped"] = [list(sf) for sf in dropped]
    return make_example(
        id=id,
        question=question,
        answers=answers,
        documents=tuple(documents),
        evidence=tuple(evidence) if has_labels else None,
        metadata=meta,
    )
