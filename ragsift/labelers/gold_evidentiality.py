"""ECoRAG's strong / weak / distractor kinds from gold supporting facts, without a reader.

The ``evidentiality`` labeler mines ECoRAG's labels with reader calls (about 40 per question);
where that is too costly, this labeler gives the same three kinds from the dataset's sentence-level
supporting facts (a proxy, documented as such in every model card that uses it):

- **strong**: a gold supporting-fact sentence;
- **weak**: another sentence of a document that holds a supporting fact (context around the
  evidence, which rarely breaks an answer);
- **distractor**: a sentence of any other document (HotpotQA's distractor paragraphs).

ECoRAG defines the kinds by what a reader answers (strong: right from the sentence alone; weak:
does not break the answer; distractor: breaks it); the proxy differs where a supporting fact does
not answer alone (a bridge fact) or a distractor sentence would not break the answer.

``max_weak`` / ``max_distractors`` keep a seeded random sample per question (every strong sentence
is kept), to cap what a trainer must encode. Deterministic for a seed and input order.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Iterator

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.labelers.base import Labeler, SentenceLabel
from ragsift.plugin import Params
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Example, Sentence

__all__ = ["GoldEvidentialityLabeler", "GoldEvidentialityParams", "KINDS"]

KINDS = ("strong", "weak", "distractor")


class GoldEvidentialityParams(Params):
    seed: int = 0
    #: at most this many weak sentences per question (seeded sample); None: all
    max_weak: int | None = Field(None, ge=0)
    #: at most this many distractor sentences per question (seeded sample); None: all
    max_distractors: int | None = Field(None, ge=0)


class GoldEvidentialityLabeler(Labeler):
    """strong / weak / distractor records from supporting facts (see the module docstring)."""

    Params = GoldEvidentialityParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._counts = {"questions": 0, "no_evidence": 0, "strong": 0, "weak": 0, "distractor": 0}

    def _sample(self, sentences: list[Sentence], limit: int | None, rng: random.Random) -> list[Sentence]:
        if limit is None or len(sentences) <= limit:
            return sentences
        chosen = set(rng.sample(range(len(sentences)), limit))
        return [s for i, s in enumerate(sentences) if i in chosen]

    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        self._counts = dict.fromkeys(self._counts, 0)
        splitter = PresplitSplitter(fallback="sentencizer")
        for example in examples:
            if example.evidence is None:
                raise ConfigError(f"GoldEvidentialityLabeler: example '{example.id}' has no gold evidence; "
                                  "this labeler needs sentence-level supporting facts.")
            self._counts["questions"] += 1
            sentences = splitter.split_all(example.documents)
            gold = evidence_mask(sentences, example.evidence)
            strong = [s for s, g in zip(sentences, gold, strict=True) if g]
            if not strong:
                self._counts["no_evidence"] += 1
                continue
            docs = {s.doc_index for s in strong}
            rng = random.Random(zlib.crc32(f"{self.params.seed}:{example.id}".encode()))
            weak = self._sample([s for s, g in zip(sentences, gold, strict=True) if not g and s.doc_index in docs],
                                self.params.max_weak, rng)
            distractors = self._sample([s for s in sentences if s.doc_index not in docs], self.params.max_distractors, rng)
            for kind, group in zip(KINDS, (strong, weak, distractors), strict=True):
                self._counts[kind] += len(group)
                for s in group:
                    yield SentenceLabel.of(example, s, kind == "strong", kind)

    def report(self) -> dict[str, int]:
        return dict(self._counts)
