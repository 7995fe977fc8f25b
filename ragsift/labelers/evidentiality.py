"""ECoRAG's evidentiality labels (Jeong et al., 2025), mined with any reader plugin.

For each question, with answers judged by ``correct`` (``accuracy``: a gold answer occurs in the
prediction as whole tokens; ``exact-match``: SQuAD EM):

- **strong** evidence: the reader answers correctly from the sentence alone, and not closed-book
  (empty context);
- **weak** evidence: not strong, and adding it to the strong evidence does not break the answer;
- **distractor**: adding it to the strong evidence breaks the answer.

Documented assumptions (the paper does not pin them down):

- "The strong evidence" a sentence is added to is the question's first strong sentence in
  document order (a context known to give the right answer); the test context lists that
  sentence and the candidate in original order, formatted by the ``original-order`` assembler,
  with each sentence's document title unless ``titles = false``. Titles help the reader resolve
  pronouns, but in HotpotQA the answer is often a document's title, so then every sentence of that
  document can be "strong" through its title alone (BENCHMARKS.md, "Evidentiality labels vs
  supporting facts").
- Questions the reader answers closed-book, and questions with no strong sentence, yield no
  records (weak / distractor are defined relative to strong evidence); both are counted.
- Candidates: every sentence of every document (``candidates = "all"``) or of the supporting
  documents only; ``max_sentences`` keeps a seeded random sample per question to cap the cost.

Reader calls go through ragsift's reader answer cache (:class:`~ragsift.readers.caching.CachingReader`,
keyed by the reader's config and its model files' hashes, as the evaluation's): with ``cache`` set
they are appended to that JSONL file as they are made (:class:`~ragsift.disk_cache.JsonlStore`), so
an interrupted run resumes where it stopped and a retrained model under the same path is asked again.
:meth:`EvidentialityLabeler.report` gives counts, reader calls, cache hits, time and tokens.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from pydantic import Field, field_validator

from ragsift.disk_cache import JsonlStore
from ragsift.labelers.base import Labeler, SentenceLabel
from ragsift.labelers.paragraph_sentences import supporting_documents
from ragsift.metrics.normalize import best_over_gold, contains_answer, exact_match
from ragsift.plugin import Params
from ragsift.readers.caching import CachingReader
from ragsift.registry import build_plugin
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Example, Sentence

__all__ = ["EvidentialityLabeler", "EvidentialityParams"]


class EvidentialityParams(Params):
    #: the reader plugin that answers: a table with ``name`` and its params
    reader: dict[str, Any]
    #: JSONL file of reader answers (created if missing; reused and extended when present)
    cache: str | None = None
    correct: Literal["accuracy", "exact-match"] = "accuracy"
    candidates: Literal["all", "supporting-documents"] = "all"
    #: at most this many candidate sentences per question (seeded sample); None: all
    max_sentences: int | None = Field(None, ge=1)
    seed: int = 0
    batch_size: int = Field(8, ge=1)
    #: show each sentence's document title in the reader's context (see the module docstring)
    titles: bool = True

    @field_validator("reader")
    @classmethod
    def _named(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("name"), str) or not value["name"]:
            raise ValueError("must be a table with the reader's 'name' (see: ragsift plugins --stage reader)")
        return value


class EvidentialityLabeler(Labeler):
    """strong / weak / distractor records (ECoRAG's rules; see the module docstring)."""

    Params = EvidentialityParams
    conformance_params = {"reader": {"name": "openai", "model": "any"}}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._reader: CachingReader | None = None
        self._stats = {"reader_calls": 0, "cache_hits": 0, "reader_seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
        self._assembler = build_plugin("assembler", {"name": "original-order", "title": self.params.titles},
                                       "EvidentialityLabeler")
        self._counts = {"questions": 0, "closed_book_correct": 0, "no_strong_evidence": 0, "labelled_questions": 0,
                        "strong": 0, "weak": 0, "distractor": 0}
        self._seconds = 0.0

    @property
    def reader(self) -> CachingReader:
        if self._reader is None:
            reader = build_plugin("reader", self.params.reader, "EvidentialityLabeler reader")
            self._reader = CachingReader(reader, JsonlStore(self.params.cache), self.params.batch_size)
        return self._reader

    def _answers(self, questions: list[str], contexts: list[str]) -> list[str]:
        """The reader's answer to each (question, context), asking only the uncached ones."""
        answers = self.reader.answer_many(questions, contexts)
        for answer in answers:
            if getattr(answer, "cached", False):
                self._stats["cache_hits"] += 1
                continue
            self._stats["reader_calls"] += 1
            self._stats["reader_seconds"] += answer.seconds
            self._stats["prompt_tokens"] += answer.prompt_tokens or 0
            self._stats["completion_tokens"] += answer.completion_tokens or 0
        return [a.text for a in answers]

    def _is_correct(self, prediction: str, answers: tuple[str, ...]) -> bool:
        if self.params.correct == "exact-match":
            return best_over_gold(exact_match, prediction, answers) == 1.0
        return any(contains_answer(prediction, a) for a in answers)

    def _candidates(self, example: Example, sentences: list[Sentence]) -> list[Sentence]:
        if self.params.candidates == "supporting-documents":
            docs = set(supporting_documents(example))
            if not docs and example.evidence:
                docs = {e.doc_index for e in example.evidence}
            sentences = [s for s in sentences if s.doc_index in docs]
        if self.params.max_sentences is not None and len(sentences) > self.params.max_sentences:
            rng = random.Random(zlib.crc32(f"{self.params.seed}:{example.id}".encode()))
            chosen = set(rng.sample(range(len(sentences)), self.params.max_sentences))
            sentences = [s for i, s in enumerate(sentences) if i in chosen]
        return sentences

    def _context(self, example: Example, sentences: list[Sentence]) -> str:
        return str(self._assembler.assemble(example.documents, sentences, list(range(len(sentences)))))

    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        splitter = PresplitSplitter(fallback="sentencizer")
        for example in examples:
            start = time.perf_counter()
            records = list(self._label_one(example, splitter))
            self._seconds += time.perf_counter() - start
            yield from records

    def _label_one(self, example: Example, splitter: PresplitSplitter) -> Iterator[SentenceLabel]:
        self._counts["questions"] += 1
        q = example.question
        (closed,) = self._answers([q], [""])
        if self._is_correct(closed, example.answers):
            self._counts["closed_book_correct"] += 1
            return
        candidates = self._candidates(example, splitter.split_all(example.documents))
        alone = self._answers([q] * len(candidates), [self._context(example, [s]) for s in candidates])
        strong = [s for s, a in zip(candidates, alone, strict=True) if self._is_correct(a, example.answers)]
        if not strong:
            self._counts["no_strong_evidence"] += 1
            return
        self._counts["labelled_questions"] += 1
        base = strong[0]
        others = [s for s in candidates if s not in strong]
        with_base = self._answers(
            [q] * len(others),
            [self._context(example, sorted([base, s], key=lambda x: (x.doc_index, x.index))) for s in others],
        )
        kind_of = {s.id: "strong" for s in strong}
        for s, a in zip(others, with_base, strict=True):
            kind_of[s.id] = "weak" if self._is_correct(a, example.answers) else "distractor"
        for s in candidates:
            kind = kind_of[s.id]
            self._counts[kind] += 1
            yield SentenceLabel.of(example, s, kind == "strong", kind)

    def report(self) -> dict[str, Any]:
        return {**self._counts, **self._stats, "labeling_seconds": round(self._seconds, 3)}
