"""DPR's retriever JSON: questions with positive, negative and hard-negative passages."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from pydantic import Field, StrictStr

from ragsift.datasets.file_loader import JsonRecordsLoader, LoaderParams, head_has_keys
from ragsift.datasets.json_records import Record, RecordModel, parse_record
from ragsift.types import Document, Example, make_example

__all__ = ["DPRLoader", "DPRRecord", "DPRPassage"]


class DPRPassage(RecordModel):
    title: StrictStr = ""
    text: StrictStr
    score: float | None = None
    passage_id: StrictStr | int | None = None
    id: StrictStr | int | None = None


class DPRRecord(RecordModel):
    """One question of DPR's ``biencoder-*.json`` retriever files."""

    question: StrictStr
    answers: list[StrictStr] = []
    positive_ctxs: list[DPRPassage] = []
    negative_ctxs: list[DPRPassage] = []
    hard_negative_ctxs: list[DPRPassage] = []
    id: StrictStr | int | None = None
    dataset: StrictStr | None = None


class DPRParams(LoaderParams):
    """How many passages of each kind make an example's documents (None: all of them)."""

    positives: int | None = Field(default=1, ge=0)
    hard_negatives: int | None = Field(default=5, ge=0)
    negatives: int | None = Field(default=4, ge=0)
    shuffle: bool = False
    seed: int = 0


def _document(passage: DPRPassage, kind: str) -> Document:
    pid = passage.passage_id if passage.passage_id is not None else passage.id
    return Document(
        title=passage.title,
        text=passage.text,
        id=str(pid) if pid is not None else passage.title,
        score=passage.score,
        metadata={"kind": kind},
    )


class DPRLoader(JsonRecordsLoader):
    """Loads DPR retriever JSON (a JSON array; JSONL of the same records also works).

    Documents are the first ``positives`` positive passages, then ``hard_negatives`` hard
    negatives, then ``negatives`` negatives (``shuffle`` mixes them, deterministically per
    question). ``metadata["positive_docs"]`` lists the positive documents' indices; the labels
    are passage-level, so ``evidence`` is ``None``.
    """

    Params = DPRParams
    format_name = "DPR retriever JSON"
    records_name = "DPR questions"

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        # a record's passage lists can be long: any one of them (with a question) is enough
        return head_has_keys(head, "question") and any(
            head_has_keys(head, key) for key in ("positive_ctxs", "hard_negative_ctxs", "negative_ctxs")
        )

    def to_example(self, record: Record) -> Example:
        """One DPR record -> an :class:`Example`."""
        raw = parse_record(DPRRecord, record, "DPR question")
        p = self.params
        picked: list[tuple[DPRPassage, str]] = []
        for passages, count, kind in (
            (raw.positive_ctxs, p.positives, "positive"),
            (raw.hard_negative_ctxs, p.hard_negatives, "hard_negative"),
            (raw.negative_ctxs, p.negatives, "negative"),
        ):
            picked.extend((passage, kind) for passage in passages[:count])
        if p.shuffle:
            random.Random(f"{p.seed}:{record.index}").shuffle(picked)
        documents = tuple(_document(passage, kind) for passage, kind in picked)
        example_id = str(raw.id) if raw.id is not None else str(record.index)
        metadata: dict[str, Any] = {
            "positive_docs": [i for i, (_, kind) in enumerate(picked) if kind == "positive"],
            "available": {
                "positive": len(raw.positive_ctxs),
                "hard_negative": len(raw.hard_negative_ctxs),
                "negative": len(raw.negative_ctxs),
            },
        }
        if raw.dataset is not None:
            metadata["dataset"] = raw.dataset
        return make_example(
            id=example_id,
            question=raw.question,
            answers=tuple(raw.answers),
            documents=documents,
            evidence=None,
            metadata=metadata,
        )
