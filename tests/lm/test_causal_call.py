"""The one causal-LM call of both engines: the same logits (and hidden states) whether the model
takes ``logits_to_keep`` or the call slices the logits itself."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.lm import EncodedPrompt, YesNoEngine
from ragsift.lm.causal_call import CausalLMCall
from ragsift.lm.token_logprobs import TokenLogProbEngine
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(OFFLINE_SMOLLM2)


@pytest.fixture(scope="module")
def model(tok):
    return tiny.build_tiny_lm("llama", len(tok))


def _without_logits_to_keep(model):
    """``model`` behind a forward that does not take ``logits_to_keep`` (older architectures)."""
    import torch

    cache_kwarg = CausalLMCall(model).cache_kwarg

    class NoKeep(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner, self.config = model, model.config

        def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, cache=None,
                    past_key_values=None):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                              use_cache=use_cache, **{cache_kwarg: cache if cache is not None else past_key_values})

        def get_input_embeddings(self):
            return model.get_input_embeddings()

        def get_output_embeddings(self):
            return model.get_output_embeddings()

    return NoKeep()


@pytest.mark.parametrize("keep", [2, [0, 3, 5]])
@pytest.mark.parametrize("hidden", [False, True])
def test_the_call_slices_what_the_model_cannot_keep(model, keep, hidden):
    import torch

    fast, slow = CausalLMCall(model), CausalLMCall(_without_logits_to_keep(model))
    assert fast.can_keep_logits and not slow.can_keep_logits
    ids = torch.tensor([[1, 5, 7, 9, 11, 13]])
    where = keep if isinstance(keep, int) else torch.tensor(keep)
    with torch.inference_mode():
        a = fast(ids, attention_mask=None, position_ids=None, keep=where, hidden=hidden)
        b = slow(ids, attention_mask=None, position_ids=None, keep=where, hidden=hidden)
    assert a.shape[1] == (keep if isinstance(keep, int) else len(keep)) and a.shape == b.shape
    np.testing.assert_allclose(a.float().numpy(), b.float().numpy(), atol=1e-5)


def test_both_engines_give_the_same_values_through_either_path(tok, model):
    slow = _without_logits_to_keep(model)
    prompts = [EncodedPrompt(tuple(tok.encode("Context: bees.")), tuple(tok.encode(f" Sentence {s}?"))) for s in "ab"]
    for layout in ("padded", "trunk", "packed"):
        np.testing.assert_allclose(YesNoEngine(slow, tok).probabilities(prompts, layout),
                                   YesNoEngine(model, tok).probabilities(prompts, layout), atol=1e-6)
    sequences = [[1, 5, 7, 9], [1, 20, 30]]
    for layout in ("padded", "packed"):
        for a, b in zip(TokenLogProbEngine(slow).logprobs(sequences, layout), TokenLogProbEngine(model).logprobs(sequences, layout),
                        strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
