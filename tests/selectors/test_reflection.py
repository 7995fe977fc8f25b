"""The reflection selector: candidate sets, both modes equal (property test), validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.errors import ConfigError, UnknownPluginError
from ragsift.hookspecs import hookimpl
from ragsift.judges.base import Judge, JudgeParams
from ragsift.registry import get_registry, reset_registry
from ragsift.selectors.base import rank_by_score
from ragsift.selectors.reflection import ReflectionSelector, candidate_sizes
from ragsift.types import Document, Example, Sentence


class FakeEvaluatorParams(JudgeParams):
    #: P(evidential) of a set, by its size; sizes not listed get ``default``
    by_size: dict[int, float] = {}
    default: float = 0.0


class FakeEvaluator(Judge):
    """Deterministic: the probability of a set depends on its size only. Records every call."""

    Params = FakeEvaluatorParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.calls: list[list[list[str]]] = []

    def probabilities(self, question, evidence_sets):
        self.calls.append([list(s) for s in evidence_sets])
        return [self.params.by_size.get(len(s), self.params.default) for s in evidence_sets]


class _FakePlugin:
    @hookimpl
    def register_judges(self, register):
        register("fake", FakeEvaluator)


@pytest.fixture(autouse=True, scope="module")
def fake_evaluator_registered():
    reset_registry()
    get_registry().add_plugin(_FakePlugin(), "tests-fake-evaluator")
    yield
    reset_registry()


def _example(n: int, docs: int = 3) -> tuple[Example, list[Sentence]]:
    documents = tuple(Document(title=f"Doc{d}", text="x" * 1000) for d in range(docs))
    sentences = [Sentence(i % docs, i // docs, 0, 1, f"sentence {i}") for i in range(n)]
    return Example(id="e", question="q?", answers=(), documents=documents), sentences


def _selector(**params: Any) -> ReflectionSelector:
    params.setdefault("judge", {"name": "fake"})
    return get_registry().create("selector", "reflection", params)


# -- candidate sets ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "n, step, max_sentences, expected",
    [
        (30, 4, 20, [4, 8, 12, 16, 20]),
        (20, 4, 20, [4, 8, 12, 16, 20]),
        (10, 4, 20, [4, 8, 10]),
        (3, 4, 20, [3]),
        (30, 4, 10, [4, 8, 10]),
        (8, 4, 8, [4, 8]),
        (5, 1, 3, [1, 2, 3]),
        (0, 4, 20, []),
    ],
)
def test_candidate_sizes(n, step, max_sentences, expected):
    assert candidate_sizes(n, step, max_sentences) == expected


def test_paper_defaults():
    selector = get_registry().create("selector", "reflection")
    cfg = selector.config()
    assert (cfg["step"], cfg["max_sentences"], cfg["mode"]) == (4, 20, "sequential")
    assert cfg["judge"]["name"] == "seq2seq" and cfg["judge"]["model"] == "google/flan-t5-large"
    assert cfg["judge"]["threshold"] == 0.5
    assert ReflectionSelector(**cfg).config() == cfg  # round trip


def test_keeps_first_evidential_set_in_rank_order():
    example, sentences = _example(30)
    scores = np.linspace(0, 1, 30)
    selector = _selector(judge={"name": "fake", "by_size": {4: 0.2, 8: 0.7, 12: 0.9}})
    selection = selector.select(example, sentences, scores)
    assert selection.kept == list(range(29, 21, -1))  # the 8 best, best first
    info = selection.info
    assert (info["chosen_k"], info["judge_calls"], info["sets_judged"], info["evidential"]) == (8, 2, 2, True)
    assert info["probabilities"] == [0.2, 0.7]
    # the evaluator saw "title: sentence" items, best first, one set per call
    calls = selector.judge.calls
    assert len(calls) == 2 and calls[0] == [
        ["Doc2: sentence 29", "Doc1: sentence 28", "Doc0: sentence 27", "Doc2: sentence 26"]
    ]
    assert calls[1][0][:4] == calls[0][0]


def test_no_evidential_set_keeps_the_largest():
    example, sentences = _example(30)
    for mode in ("sequential", "batched"):
        selection = _selector(mode=mode).select(example, sentences, np.arange(30.0))
        assert len(selection.kept) == 20 and selection.info["evidential"] is False
        assert selection.info["sets_judged"] == 5
        assert selection.info["judge_calls"] == (5 if mode == "sequential" else 1)


def test_fewer_sentences_than_a_step_judges_all_of_them():
    example, sentences = _example(3)
    selection = _selector(judge={"name": "fake", "default": 1.0}).select(example, sentences, np.array([0.1, 0.9, 0.5]))
    assert selection.kept == [1, 2, 0]
    assert selection.info["candidate_sizes"] == [3]


def test_empty_input_calls_no_evaluator():
    example, _ = _example(0)
    selector = _selector()
    selection = selector.select(example, [], np.zeros(0))
    assert selection.kept == [] and selection.info["judge_calls"] == 0
    assert selector.judge.calls == []


def test_threshold_is_inclusive():
    example, sentences = _example(10)
    selection = _selector(judge={"name": "fake", "threshold": 0.6, "by_size": {4: 0.6}}).select(
        example, sentences, np.arange(10.0)
    )
    assert selection.info["chosen_k"] == 4


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(st.integers(min_value=-3, max_value=3), min_size=0, max_size=40),  # small range: many ties
    step=st.integers(min_value=1, max_value=7),
    extra=st.integers(min_value=0, max_value=20),
    probs=st.dictionaries(st.integers(min_value=1, max_value=40), st.floats(min_value=0.0, max_value=1.0), max_size=12),
    threshold=st.floats(min_value=0.0, max_value=1.0),
)
def test_batched_and_sequential_select_the_same_sentences(scores, step, extra, probs, threshold):
    example, sentences = _example(len(scores))
    score_array = np.asarray(scores, dtype=float)
    evaluator = {"name": "fake", "by_size": probs, "threshold": threshold}
    seq = _selector(step=step, max_sentences=step + extra, judge=evaluator, mode="sequential")
    bat = _selector(step=step, max_sentences=step + extra, judge=evaluator, mode="batched")
    a = seq.select(example, sentences, score_array)
    b = bat.select(example, sentences, score_array)
    assert a.kept == b.kept
    assert a.info["chosen_k"] == b.info["chosen_k"] and a.info["evidential"] == b.info["evidential"]
    # against the definition: the first evidential candidate, else the largest
    sizes = candidate_sizes(len(scores), step, step + extra)
    ranked = rank_by_score(score_array)
    evidential = [k for k in sizes if probs.get(k, 0.0) >= threshold]
    k = evidential[0] if evidential else (sizes[-1] if sizes else 0)
    assert a.kept == ranked[:k]
    # the loop stops early; the batched call judges everything at once
    assert a.info["judge_calls"] == a.info["sets_judged"] == (sizes.index(k) + 1 if evidential else len(sizes))
    assert b.info["judge_calls"] == (1 if sizes else 0) and b.info["sets_judged"] == len(sizes)
    assert b.info["probabilities"][: a.info["sets_judged"]] == a.info["probabilities"]


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, match",
    [
        ({"step": 0}, "step"),
        ({"max_sentences": 0}, "max_sentences"),
        ({"step": 5, "max_sentences": 4}, r"max_sentences \(4\) must be >= step \(5\)"),
        ({"mode": "parallel"}, "mode"),
        ({"judge": {"name": "fake", "threshold": 1.5}}, "threshold"),
        ({"judge": {"name": "fake", "threshold": -0.01}}, "threshold"),
        ({"judge": {"threshold": 2.0}}, "Seq2SeqJudge"),  # no name: the default evaluator
        ({"judge": 3}, "must be a plugin name or a table"),
        ({"evidence_template": "{title}"}, r"\{sentence\}"),
        ({"evidence_template": "{sentence} {rank}"}, "only use"),
    ],
)
def test_rejects_bad_params(params, match):
    params.setdefault("judge", {"name": "fake"})
    with pytest.raises(ConfigError, match=match):
        ReflectionSelector(**params)


def test_unknown_evaluator_lists_the_available_ones():
    with pytest.raises(UnknownPluginError, match="Available judges: causal, fake, seq2seq"):
        ReflectionSelector(judge={"name": "nope"})


def test_evaluator_params_without_name_override_the_default():
    selector = ReflectionSelector(judge={"threshold": 0.8})
    assert selector.config()["judge"]["name"] == "seq2seq"
    assert selector.judge.params.threshold == 0.8


def test_judge_by_name_and_the_old_evaluator_key():
    assert ReflectionSelector(judge="fake").config()["judge"]["name"] == "fake"
    with pytest.raises(ConfigError, match="evaluator"):  # the judge's key before 0.1.0: unknown now
        ReflectionSelector(evaluator={"name": "fake", "threshold": 0.7})
