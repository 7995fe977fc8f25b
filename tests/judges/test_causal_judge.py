"""The causal Yes/No evaluator: a tiny random Llama with SmolLM2's tokenizer, and real SmolLM2."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.judges.causal import CausalJudge
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.registry import get_registry

QUESTION = "Who wrote Hamlet?"
SETS = [
    ["Hamlet: Hamlet is a tragedy written by William Shakespeare."],
    ["Paris: Paris is the capital of France.", "Cat: A cat sat on the mat, and it was a rather long sentence."],
    [],
]


def _hand_probability(evaluator: CausalJudge, prompt: str) -> float:
    import torch

    ids = torch.tensor([evaluator._tokenizer.encode(prompt, add_special_tokens=False)])
    with torch.no_grad():
        logits = evaluator._model(input_ids=ids).logits[0, -1]
    yes, no = evaluator.label_ids
    return float(torch.softmax(logits[[yes, no]], dim=0)[0])


def test_registered_and_builds_without_weights():
    evaluator = get_registry().create("judge", "causal")
    assert isinstance(evaluator, CausalJudge)
    assert evaluator.config()["model"] == OFFLINE_SMOLLM2
    assert evaluator._model is None


def test_prompt_uses_the_chat_template(tiny_llama):
    evaluator = CausalJudge(model=tiny_llama, device="cpu", system_prompt="Be strict.")
    prompt = evaluator.prompt(QUESTION, SETS[0])
    assert "<|im_start|>system\nBe strict." in prompt
    assert "Question:\nWho wrote Hamlet?\nEvidence:\nHamlet: Hamlet is a tragedy" in prompt
    assert prompt.rstrip().endswith("<|im_start|>assistant")
    raw = CausalJudge(model=tiny_llama, device="cpu", use_chat_template=False).prompt(QUESTION, SETS[0])
    assert "<|im_start|>" not in raw and raw.startswith("Question:\nWho wrote Hamlet?")


def test_probabilities_match_a_forward_pass_and_ignore_left_padding(tiny_llama):
    evaluator = CausalJudge(model=tiny_llama, device="cpu", batch_size=2, share_prefix=False)  # 2 padded batches
    probs = evaluator.probabilities(QUESTION, SETS)
    expected = [_hand_probability(evaluator, evaluator.prompt(QUESTION, s)) for s in SETS]
    np.testing.assert_allclose(probs, expected, atol=1e-5)
    singles = [evaluator.probabilities(QUESTION, [s])[0] for s in SETS]
    np.testing.assert_allclose(probs, singles, atol=1e-5)
    assert all(0.0 < p < 1.0 for p in probs)
    assert len(set(np.round(probs, 6))) == 3  # the prompts differ, so do the answers


def test_label_ids_are_the_single_yes_no_tokens(tiny_llama):
    evaluator = CausalJudge(model=tiny_llama, device="cpu")
    evaluator.warm_up()
    tok = evaluator._tokenizer
    assert evaluator.label_ids == (
        tok.encode("Yes", add_special_tokens=False)[0],
        tok.encode("No", add_special_tokens=False)[0],
    )


def test_multi_token_answer_is_refused(tiny_llama):
    evaluator = CausalJudge(model=tiny_llama, positive_token="Absolutely certain")
    with pytest.raises(ConfigError, match="exactly one token"):
        evaluator.warm_up()


def test_overlong_prompt_is_refused(tiny_llama):
    evaluator = CausalJudge(model=tiny_llama, device="cpu", max_length=16)
    with pytest.raises(PromptTooLongError, match="max_length is 16"):
        evaluator.probabilities(QUESTION, SETS[:1])


def test_empty_input_loads_nothing():
    evaluator = CausalJudge(model="/nonexistent/llm")
    assert evaluator.probabilities("q", []) == []
    assert evaluator._model is None


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"threshold": 2}, "threshold"),
        ({"template": "{evidence}"}, r"\{question\}"),
        ({"template": "{question} {evidence"}, "not a valid format string"),
        ({"positive_token": "No"}, "must differ"),
        ({"max_length": 0}, "max_length"),
        ({"temperature": 0.1}, "unknown parameter"),
    ],
)
def test_rejects_bad_params(bad, match):
    with pytest.raises(ConfigError, match=match):
        CausalJudge(**bad)


@pytest.mark.integration
@pytest.mark.slow
def test_smollm2_gives_batch_independent_probabilities():
    # SmolLM2-135M zero-shot does NOT tell sufficient from insufficient evidence (see
    # docs/ecorag.md); this checks the real model path end to end, not its judgement.
    evaluator = CausalJudge(device="cpu", batch_size=2)
    sets = [SETS[0], SETS[1][:1], SETS[1]]
    batched = evaluator.probabilities(QUESTION, sets)
    singles = [evaluator.probabilities(QUESTION, [s])[0] for s in sets]
    np.testing.assert_allclose(batched, singles, atol=1e-4)
    assert all(0.0 < p < 1.0 for p in batched)


def _nested_sets() -> list[list[str]]:
    items = [f"Doc{i}: Sentence number {i} says something about topic {i % 3}." for i in range(10)]
    return [items[:k] for k in (2, 4, 6, 8, 10)]


@pytest.mark.parametrize("use_chat_template", [True, False])
def test_shared_prefix_equals_padded_batches_and_single_prompts(tiny_llama, use_chat_template):
    sets = _nested_sets() + [["Unrelated: nothing shared after the question."], _nested_sets()[1]]  # + a duplicate
    shared = CausalJudge(model=tiny_llama, device="cpu", use_chat_template=use_chat_template)
    padded = CausalJudge(model=tiny_llama, device="cpu", use_chat_template=use_chat_template, share_prefix=False)
    a = shared.probabilities(QUESTION, sets)
    b = padded.probabilities(QUESTION, sets)
    singles = [shared.probabilities(QUESTION, [s])[0] for s in sets]
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(a, singles, atol=1e-5)
    assert a[1] == pytest.approx(a[-1], abs=1e-6)


def test_shared_prefix_runs_fewer_tokens(tiny_llama, monkeypatch):
    evaluator = CausalJudge(model=tiny_llama, device="cpu")
    evaluator.warm_up()
    seen: list[int] = []
    forward = evaluator._model.forward

    @functools.wraps(forward)  # keeps the signature: the evaluator inspects it
    def counting(*args, **kwargs):
        seen.append(int(kwargs["input_ids"].numel()))
        return forward(*args, **kwargs)

    monkeypatch.setattr(evaluator._model, "forward", counting)
    sets = _nested_sets()
    evaluator.probabilities(QUESTION, sets)
    prompts = [evaluator._tokenizer.encode(evaluator.prompt(QUESTION, s), add_special_tokens=False) for s in sets]
    assert len(seen) == len(sets)  # the longest prompt, then each other prompt's own tokens
    assert seen[0] == max(len(p) for p in prompts)
    assert sum(seen) < 0.5 * sum(len(p) for p in prompts)
