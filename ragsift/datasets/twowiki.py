"""The official 2WikiMultihopQA JSON: HotpotQA's shape plus ``evidences`` (knowledge-base triples)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import Field, StrictInt, StrictStr

from ragsift.datasets.file_loader import FileLoader, head_has_keys, head_starts_with
from ragsift.datasets.hotpotqa import context_example
from ragsift.datasets.json_records import Record, RecordModel, iter_json_array, parse_record
from ragsift.types import Example

__all__ = ["TwoWikiLoader", "TwoWikiRecord"]


class TwoWikiRecord(RecordModel):
    """One question of the official 2WikiMultihopQA files (``train.json``, ``dev.json``)."""

    id: StrictStr = Field(alias="_id")
    type: StrictStr | None = None
    question: StrictStr
    context: list[tuple[StrictStr, list[StrictStr]]]
    supporting_facts: list[tuple[StrictStr, StrictInt]] = []
    evidences: list[list[StrictStr]] = []  # [subject, relation, object] triples
    answer: StrictStr = ""


class TwoWikiLoader(FileLoader):
    """Loads the official 2WikiMultihopQA JSON (Ho et al., 2020).

    Read as HotpotQA is (:class:`~ragsift.datasets.hotpotqa.HotpotQALoader`): one
    :class:`~ragsift.types.Document` per context paragraph with its sentence spans, the
    supporting-fact sentences as gold evidence (sentence-level labels). ``metadata`` keeps the
    question ``type`` (compositional, comparison, bridge_comparison, inference) and the
    ``evidences`` triples. Told apart from HotpotQA files by their ``evidences`` key.
    """

    format_name = "2WikiMultihopQA JSON"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_starts_with(head, "[") and head_has_keys(head, "_id", "context", "evidences")

    def read(self, path: Path) -> Iterator[Example]:
        for record in iter_json_array(path, "2WikiMultihopQA questions"):
            yield self.to_example(record)

    @staticmethod
    def to_example(record: Record) -> Example:
        """One 2WikiMultihopQA record -> an :class:`Example`."""
        raw = parse_record(TwoWikiRecord, record, "2WikiMultihopQA question")
        return context_example(raw.id, raw.question, (raw.answer,) if raw.answer else (), raw.context,
                               raw.supporting_facts, has_labels=isinstance(record.value, dict) and "supporting_facts" in record.value,
                               metadata={"type": raw.type, "evidences": [list(e) for e in raw.evidences]})
