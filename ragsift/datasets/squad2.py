"""The official SQuAD 2.0 JSON: articles of paragraphs, each with its questions.

Each question's documents are its own paragraph followed by other paragraphs of the same
article as distractors; the gold evidence is the sentence (or sentences) holding the answer.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from ragsift.datasets.file_loader import FileLoader, LoaderParams, head_has_keys, head_starts_with
from ragsift.datasets.json_records import Record, RecordModel, iter_member_array, parse_record
from ragsift.plugin import PluginSpec
from ragsift.registry import build_plugin
from ragsift.splitters.base import trim_span
from ragsift.types import Document, EvidenceSpan, Example, make_example

__all__ = ["SQuAD2Loader", "SQuADArticle", "answer_sentences", "align_answer"]

Span = tuple[int, int]
DEFAULT_SPLITTER = {"name": "nltk-punkt"}


class SQuADAnswer(RecordModel):
    text: StrictStr
    answer_start: StrictInt


class SQuADQuestion(RecordModel):
    id: StrictStr
    question: StrictStr
    answers: list[SQuADAnswer] = []
    is_impossible: StrictBool = False
    plausible_answers: list[SQuADAnswer] = []


class SQuADParagraph(RecordModel):
    context: StrictStr
    qas: list[SQuADQuestion] = []


class SQuADArticle(RecordModel):
    """One article (``data[i]``) of a SQuAD 1.1 / 2.0 file."""

    title: StrictStr = ""
    paragraphs: list[SQuADParagraph]


class SQuAD2Params(LoaderParams):
    """``max_distractors``: other paragraphs of the article added after the question's own;
    ``distractors``: which ones (``following``: the next paragraphs of the article, wrapping
    around; ``random``: a random choice, seeded per question); ``splitter``: the registered
    splitter (a name or a spec table) whose sentences define the evidence and are stored as
    ``Document.sentence_spans``."""

    max_distractors: int = Field(default=9, ge=0)
    distractors: Literal["following", "random"] = "following"
    seed: int = 0
    splitter: PluginSpec = Field(default_factory=lambda: dict(DEFAULT_SPLITTER))


def align_answer(context: str, text: str, start: int) -> Span | None:
    """Character span of an answer; when ``answer_start`` is off, the occurrence of ``text``
    nearest to it. None when the text is not in the context."""
    if not text:
        return None
    if context[start : start + len(text)] == text:
        return start, start + len(text)
    best: int | None = None
    found = context.find(text)
    while found != -1:
        if best is None or abs(found - start) < abs(best - start):
            best = found
        found = context.find(text, found + 1)
    return None if best is None else (best, best + len(text))


def answer_sentences(sentences: Sequence[Span], answer: Span) -> list[Span]:
    """The sentences overlapping ``answer`` (the answer itself if it lies between sentences)."""
    start, end = answer
    hits = [s for s in sentences if s[0] < end and start < s[1]]
    return hits or [answer]


def _trim(text: str, spans: Sequence[Span]) -> tuple[Span, ...]:
    trimmed = (trim_span(text, start, end) for start, end in spans)
    return tuple((start, end) for start, end in trimmed if end > start)


class SQuAD2Loader(FileLoader):
    """Loads SQuAD 2.0 (and 1.1) JSON; unanswerable questions get ``answers=()`` and
    ``evidence=()``. Answers whose text is not in the paragraph are counted in
    ``metadata["unaligned_answers"]`` and give no evidence."""

    Params = SQuAD2Params
    format_name = "SQuAD JSON"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._splitter: Any = None

    @classmethod
    def sniff(cls, path: Path, head: str) -> bool:
        return head_starts_with(head, "{") and head_has_keys(head, "data", "paragraphs", "qas")

    def _sentence_spans(self, text: str) -> tuple[Span, ...]:
        if self._splitter is None:
            self._splitter = build_plugin("splitter", self.params.splitter, "SQuAD2Loader 'splitter'", DEFAULT_SPLITTER)
        return _trim(text, self._splitter.spans(text)) if text.strip() else ()

    def read(self, path: Path) -> Iterator[Example]:
        for record in iter_member_array(path, "data", "SQuAD articles", "a SQuAD file ({version, data})"):
            yield from self.article_examples(record)

    def _distractors(self, n: int, own: int, qid: str) -> list[int]:
        others = [(own + k) % n for k in range(1, n)]
        if self.params.distractors == "random":
            rng = random.Random(f"{self.params.seed}:{qid}")
            return rng.sample(others, min(self.params.max_distractors, len(others)))
        return others[: self.params.max_distractors]

    def article_examples(self, record: Record) -> Iterator[Example]:
        """The examples of one article."""
        article = parse_record(SQuADArticle, record, "SQuAD article")
        title = article.title.replace("_", " ")
        documents = [
            Document(
                title=title,
                text=p.context,
                id=f"{article.title}#{i}",
                sentence_spans=self._sentence_spans(p.context),
                metadata={"paragraph": i},
            )
            for i, p in enumerate(article.paragraphs)
        ]
        for p_index, paragraph in enumerate(article.paragraphs):
            own = documents[p_index]
            for qa in paragraph.qas:
                chosen = [own] + [documents[i] for i in self._distractors(len(documents), p_index, qa.id)]
                yield self._example(qa, chosen, article.title, p_index)

    @staticmethod
    def _example(qa: SQuADQuestion, documents: list[Document], article: str, p_index: int) -> Example:
        own = documents[0]
        metadata: dict[str, Any] = {"article": article, "paragraph": p_index, "is_impossible": qa.is_impossible}
        if qa.plausible_answers:
            metadata["plausible_answers"] = list(dict.fromkeys(a.text for a in qa.plausible_answers))
        answers: list[str] = []
        evidence: list[EvidenceSpan] = []
        unaligned = 0
        if not qa.is_impossible:
            for answer in qa.answers:
                if answer.text not in answers:
                    answers.append(answer.text)
                span = align_answer(own.text, answer.text, answer.answer_start)
                if span is None:
                    unaligned += 1
                    continue
                for start, end in answer_sentences(own.sentence_spans or (), span):
                    ev = EvidenceSpan(0, start, end)
                    if ev not in evidence:
                        evidence.append(ev)
        metadata["unaligned_answers"] = unaligned
        evidence.sort(key=lambda e: (e.start, e.end))
        return make_example(
            id=qa.id,
            question=qa.question,
            answers=tuple(answers),
            documents=tuple(documents),
            evidence=tuple(evidence),
            metadata=metadata,
        )
