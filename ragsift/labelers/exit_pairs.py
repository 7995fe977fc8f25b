"""EXIT's training data (Hwang et al., 2024): sentence-level supporting facts as positives.

For every gold evidence sentence of an example (HotpotQA supporting facts, on the dataset's own
sentences): two positive records per ``hard_negatives`` + ``random_negatives`` negatives, by
default the paper's 2:1:1 ratio of positive : hard negative : random negative, where

- a positive is a supporting-fact sentence with its own document as context;
- a hard negative is another (non-evidence) sentence of a supporting document;
- a random negative is a sentence paired with the query of a *different* example.

The paper does not say how the 2:1:1 ratio is reached; here each example contributes all its
positives and draws ``ceil(positives / 2)`` negatives of each kind (documented assumption).

Departure from the paper, off by default: ``distractor_negatives`` > 0 adds that many
*distractor negatives* per two positives: sentences of the example's own non-supporting
documents (HotpotQA's distractor paragraphs), kind ``distractor_negative``. EXIT's recipe has
none, yet at test time most sentences a scorer sees come from such documents (8 of 10 HotpotQA
documents); with ``distractor_negatives = 0`` the output is the paper's 2:1:1 recipe exactly.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterable, Iterator

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.labelers.base import Labeler, SentenceLabel
from ragsift.plugin import Params
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Example

__all__ = ["ExitPairsLabeler"]


class ExitPairsParams(Params):
    seed: int = 0
    #: negatives of each kind per two positives (2:1:1 in the paper)
    negatives_per_two_positives: int = Field(1, ge=0)
    #: distractor-document negatives per two positives (not in the paper; 0 = EXIT's recipe)
    distractor_negatives: int = Field(0, ge=0)


class ExitPairsLabeler(Labeler):
    """Positive / hard-negative / random-negative records for the EXIT classifier."""

    Params = ExitPairsParams

    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        pool = list(examples)
        splitter = PresplitSplitter(fallback="sentencizer")
        for position, example in enumerate(pool):
            if example.evidence is None:
                raise ConfigError(f"ExitPairsLabeler: example '{example.id}' has no gold evidence; EXIT labels need supporting facts.")
            rng = random.Random(zlib.crc32(f"{self.params.seed}:{example.id}".encode()))
            sentences = splitter.split_all(example.documents)
            gold = evidence_mask(sentences, example.evidence)
            positives = [s for s, g in zip(sentences, gold, strict=True) if g]
            if not positives:
                continue
            gold_docs = {s.doc_index for s in positives}
            hard = [s for s, g in zip(sentences, gold, strict=True) if not g and s.doc_index in gold_docs]
            wanted = math.ceil(len(positives) / 2) * self.params.negatives_per_two_positives
            for s in positives:
                yield SentenceLabel.of(example, s, True, "positive")
            for s in rng.sample(hard, min(wanted, len(hard))):
                yield SentenceLabel.of(example, s, False, "hard_negative")
            distractors = [s for s, g in zip(sentences, gold, strict=True) if not g and s.doc_index not in gold_docs]
            wanted_distractors = math.ceil(len(positives) / 2) * self.params.distractor_negatives
            if wanted_distractors:  # a generator of their own: the paper's records stay the same
                own_rng = random.Random(zlib.crc32(f"{self.params.seed}:{example.id}:distractors".encode()))
                for s in own_rng.sample(distractors, min(wanted_distractors, len(distractors))):
                    yield SentenceLabel.of(example, s, False, "distractor_negative")
            others = [e for i, e in enumerate(pool) if i != position and e.question != example.question]
            for _ in range(wanted if others else 0):
                other = rng.choice(others)
                other_sentences = splitter.split_all(other.documents)
                if other_sentences:
                    s = rng.choice(other_sentences)
                    yield SentenceLabel.of(example, s, False, "random_negative", source=other)
