from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.testing import sample_example
from ragsift.types import Sentence

SENTS = [
    Sentence(d, i, 0, 4, t)
    for d, i, t in [(0, 0, "a b c"), (0, 1, "d e"), (1, 0, "f"), (1, 1, "g h i j"), (2, 0, "k l")]
]
EX = sample_example()


def select(name, scores, **params):
    return get_registry().create("selector", name, params).select(EX, SENTS, np.asarray(scores, dtype=float)).kept


def test_threshold_keeps_greater_or_equal_in_score_order():
    assert select("threshold", [0.5, 0.49, 0.9, 0.5000001, 0.1]) == [2, 3, 0]


def test_threshold_may_keep_nothing():
    assert select("threshold", [0.1, 0.2, 0.3, 0.4, 0.0]) == []


def test_threshold_min_keep_keeps_the_best_below_the_threshold_and_no_more():
    assert select("threshold", [0.1, 0.3, 0.3, 0.4, 0.0], min_keep=1) == [3]
    assert select("threshold", [0.1, 0.3, 0.3, 0.2, 0.0], min_keep=2) == [1, 2]  # ties: the earlier first
    assert select("threshold", [0.5, 0.49, 0.9, 0.6, 0.1], min_keep=1) == [2, 3, 0]  # enough above it already
    make = get_registry().create
    assert make("selector", "threshold", {"threshold": 0.3}).config() == {"threshold": 0.3}  # unchanged configs
    assert make("selector", "threshold", {"threshold": 0.3, "min_keep": 1}).config() == {"threshold": 0.3, "min_keep": 1}
    with pytest.raises(ConfigError, match="min_keep"):
        make("selector", "threshold", {"min_keep": -1})


def test_threshold_rejects_non_finite_with_readable_message():
    with pytest.raises(ConfigError) as info:
        get_registry().create("selector", "threshold", {"threshold": float("nan")})
    assert str(info.value).startswith("ThresholdSelector: 'threshold': must be a finite number; got nan")


def test_top_k_global_and_ties_keep_original_order():
    assert select("top-k", [0.3, 0.9, 0.3, 0.1, 0.3], k=3) == [1, 0, 2]


def test_top_k_per_document():
    assert select("top-k", [0.3, 0.9, 0.2, 0.1, 0.5], k=1, per_document=True) == [1, 4, 2]


def test_top_k_rejects_zero_and_unknown_keys():
    with pytest.raises(ConfigError, match=r"TopKSelector: 'k': Input should be greater than or equal to 1; got 0"):
        get_registry().create("selector", "top-k", {"k": 0})
    with pytest.raises(ConfigError, match=r"unknown parameter 'topk' \(known: k, per_document\)"):
        get_registry().create("selector", "top-k", {"topk": 3})


def test_token_budget_greedy_skips_what_does_not_fit():
    # word counts: 3, 2, 1, 4, 2 ; best first: 3 (4 words) then 0 (3) -> 7, 1 (2) would make 9 > 8, 2 (1) fits
    kept = select("token-budget", [0.5, 0.4, 0.1, 0.9, 0.0], budget=8)
    assert kept == [3, 0, 2]
    assert sum(len(SENTS[i].text.split()) for i in kept) <= 8


def test_token_budget_counts_in_a_named_tokenizer():
    from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer

    selector = get_registry().create("selector", "token-budget", {"budget": 3, "tokenizer": OFFLINE_SMOLLM2})
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    counts = selector.token_counts(SENTS)
    assert counts == [len(tok(s.text, add_special_tokens=False)["input_ids"]) for s in SENTS]
    kept = selector.select(EX, SENTS, np.array([0.5, 0.4, 0.1, 0.9, 0.0])).kept
    assert sum(counts[i] for i in kept) <= 3


def test_all_keeps_everything_in_order():
    assert select("all", [0.1, 0.9, 0.3, 0.2, 0.5]) == [0, 1, 2, 3, 4]
