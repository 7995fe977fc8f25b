"""Selective-Context's percentile filter and LongLLMLingua's rate selector on handmade scores."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.selectors.percentile import PercentileSelector
from ragsift.selectors.rate import RateSelector
from ragsift.testing import presplit_sentences, sample_example
from ragsift.types import Sentence


def _sentences(words_per_doc: list[list[int]]) -> list[Sentence]:
    out = []
    for d, counts in enumerate(words_per_doc):
        for i, n in enumerate(counts):
            text = " ".join(["w"] * n)
            out.append(Sentence(d, i, 0, len(text), text))
    return out


def test_percentile_keeps_scores_at_or_above_the_percentile():
    example = sample_example()
    sentences = presplit_sentences(example)  # 8
    scores = np.array([5.0, 1.0, 7.0, 3.0, 2.0, 8.0, 4.0, 6.0])
    selection = PercentileSelector(ratio=0.5).select(example, sentences, scores)
    assert selection.kept == [5, 2, 7, 0]  # median 4.5: the four above, best first
    assert selection.info["threshold"] == pytest.approx(4.5)
    assert PercentileSelector(ratio=0.0).select(example, sentences, scores).kept == list(np.argsort(-scores))
    # linear interpolation as numpy: the 35th percentile of 1..8 is 3.45
    assert PercentileSelector(ratio=0.35).select(example, sentences, scores).kept == [5, 2, 7, 0, 6]


def test_percentile_keeps_ties_and_refuses_a_bad_ratio():
    example = sample_example()
    sentences = presplit_sentences(example)
    assert len(PercentileSelector().select(example, sentences, np.ones(8)).kept) == 8
    for bad in (1.0, -0.1):
        with pytest.raises(ConfigError, match="PercentileSelector: 'ratio'"):
            PercentileSelector(ratio=bad)


def test_rate_by_sentence_keeps_the_crossing_sentence_or_skips_it():
    sentences = _sentences([[4, 4, 2]])  # 10 words; rate 0.5 -> 5 words
    scores = np.array([3.0, 2.0, 1.0])
    example = sample_example()
    keep_last = RateSelector(rate=0.5).select(example, sentences, scores)
    assert keep_last.kept == [0, 1] and keep_last.info == {"tokens": 8, "budget": 5.0}
    skip = RateSelector(rate=0.5, overflow="skip").select(example, sentences, scores)
    assert skip.kept == [0] and skip.info["tokens"] == 4  # 4 + 4 and 4 + 2 words are both over 5
    assert RateSelector(rate=0.6, overflow="skip").select(example, sentences, scores).kept == [0, 2]


def test_rate_by_document_keeps_whole_documents_in_rank_order():
    sentences = _sentences([[3, 3], [2, 2, 2], [5], [1, 1]])  # 20 words
    # document scores: doc 1 best (its best sentence), then 3, 0, 2
    scores = np.array([0.1, 0.2, 0.9, 0.3, 0.3, 0.0, 0.5, 0.5])
    example = sample_example()
    selection = RateSelector(rate=0.5, granularity="document").select(example, sentences, scores)
    # doc 1 (6 words), doc 3 (2 words) -> 8; doc 0 (6 more) crosses 10 and is kept; then stop
    assert selection.kept == [2, 3, 4, 6, 7, 0, 1] and selection.info["tokens"] == 14
    skip = RateSelector(rate=0.5, granularity="document", overflow="skip").select(example, sentences, scores)
    assert skip.kept == [2, 3, 4, 6, 7]  # doc 0 skipped, doc 2 (5 words) does not fit either
    assert RateSelector(rate=1.0, granularity="document").select(example, sentences, scores).kept == [
        2, 3, 4, 6, 7, 0, 1, 5]


def test_rate_counts_tokens_of_a_named_tokenizer():
    from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer

    tok = load_tokenizer(OFFLINE_SMOLLM2)
    example = sample_example()
    sentences = presplit_sentences(example)
    selection = RateSelector(rate=0.3, tokenizer=OFFLINE_SMOLLM2, overflow="skip").select(
        example, sentences, np.arange(8.0))
    counts = [len(tok.encode(s.text, add_special_tokens=False)) for s in sentences]
    assert sum(counts[i] for i in selection.kept) <= 0.3 * sum(counts)
    assert selection.info["budget"] == pytest.approx(0.3 * sum(counts))
