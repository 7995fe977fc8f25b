"""The Yes/No engine: every layout gives the same probabilities; auto picks the cheapest layout the
model supports; a named layout the model cannot run is refused; the one causal-LM call (shared with the token
log-probability engine) gives the same values with or without ``logits_to_keep``."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import ConfigError
from ragsift.lm import LAYOUTS, EncodedPrompt, YesNoEngine
from ragsift.lm.causal_call import CausalLMCall
from ragsift.lm.layouts import layout_tokens
from ragsift.lm.token_logprobs import TokenLogProbEngine
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(OFFLINE_SMOLLM2)


@pytest.fixture(scope="module")
def model(tok):
    return tiny.build_tiny_lm("llama", len(tok))


def _nested(tok) -> list[EncodedPrompt]:
    """ECoRAG-like prompts: each one extends the evidence of the one before."""
    items = " ".join(f"Sentence {i} says something about topic {i % 3}." for i in range(8))
    words = items.split()
    return [EncodedPrompt((), tuple(tok.encode(" ".join(words[:k]) + " Enough?"))) for k in (6, 12, 24, 48)]


def _grouped(tok) -> list[EncodedPrompt]:
    """EXIT-like prompts: two documents (prefixes), three sentences (suffixes) each."""
    head = tuple(tok.encode("Query: who built it? Context:"))
    out = []
    for doc in ("The tower is in Paris.", "Bees live in colonies."):
        prefix = head + tuple(tok.encode(" " + doc))
        out += [EncodedPrompt(prefix, tuple(tok.encode(f" Sentence {s}: useful?"))) for s in ("one", "two", "three")]
    return out


def _hand(model, prompts, engine) -> np.ndarray:
    import torch

    out = []
    with torch.no_grad():
        for p in prompts:
            logits = model(torch.tensor([p.ids])).logits[0, -1].double()
            probs = torch.softmax(logits, dim=-1)
            out.append(float(probs[engine.positive_id] / (probs[engine.positive_id] + probs[engine.negative_id])))
    return np.array(out)


@pytest.mark.parametrize("make", [_nested, _grouped])
def test_every_layout_gives_the_probabilities_of_each_prompt_alone(tok, model, make):
    prompts = make(tok)
    engine = YesNoEngine(model, tok, batch_size=2)
    hand = _hand(model, prompts, engine)
    for layout in LAYOUTS:
        got = engine.probabilities(prompts, layout)
        assert np.abs(got - hand).max() <= 1e-5, layout
        assert engine.stats["layout"] == layout
        assert engine.stats["tokens"] == layout_tokens(prompts, layout, 2), layout
    assert hand.std() > 1e-3


def test_auto_runs_the_cheapest_layout(tok, model):
    engine = YesNoEngine(model, tok, batch_size=8)
    assert engine.choose_layout(_nested(tok)) == "trunk"
    assert engine.choose_layout(_grouped(tok)) == "packed"
    assert engine.choose_layout(_nested(tok)[:1]) == "padded"  # a single prompt: nothing to share
    assert engine.probabilities([]).shape == (0,)


def test_a_model_that_cannot_share_prefixes(tok):
    model = tiny.build_tiny_lm("llama", len(tok))
    model.config.sliding_window = 8
    engine = YesNoEngine(model, tok, owner="Owner")
    prompts = _nested(tok)
    with pytest.raises(
        ConfigError, match=r"Owner: the trunk layout cannot apply .* sliding attention window \(8 tokens\)"
    ):
        engine.probabilities(prompts, "trunk")
    got = engine.probabilities(prompts, "auto")
    assert engine.stats["layout"] == "padded" and set(engine.stats["skipped"]) == {"trunk", "packed"}
    assert np.abs(got - _hand(model, prompts, engine)).max() <= 1e-5
    with pytest.raises(ConfigError, match="unknown layout 'fast'"):
        engine.probabilities(prompts, "fast")


def test_the_packed_pass_takes_no_slow_path(tok, model):
    """Guards the packed layout's model calls (issue 29), without timing anything: one call for
    the shared start plus one per document (all its sentences fit one pass), a 4-D block mask
    into the model's own sdpa/eager attention, logits only at the kept positions, and no hook
    capturing hidden states unless a readout asks for them. Planted slow versions it fails on:
    logits at every position (``keep`` dropped), a hook left on the output layer, the model
    switched to another attention implementation, the context re-run for every chunk."""
    import torch

    prompts = _grouped(tok)
    engine = YesNoEngine(model, tok, batch_size=8)
    head = model.get_output_embeddings()
    calls: list[dict] = []

    def before(_module, _args, kwargs):
        calls.append({"mask": kwargs.get("attention_mask"), "keep": kwargs.get("logits_to_keep"),
                      "hooks": len(head._forward_hooks), "implementation": model.config._attn_implementation,
                      "tokens": kwargs["input_ids"].shape[1]})

    def after(_module, _args, _kwargs, output):
        calls[-1]["logit_rows"] = output.logits.shape[1]

    handles = [model.register_forward_pre_hook(before, with_kwargs=True),
               model.register_forward_hook(after, with_kwargs=True)]
    try:
        engine.probabilities(prompts, "packed")
        assert len(calls) == engine.stats["forward_passes"] == 1 + 2  # shared start, then one per document
        assert sum(c["tokens"] for c in calls) == engine.stats["tokens"] == layout_tokens(prompts, "packed", 8)
        assert {c["implementation"] for c in calls} <= {"sdpa", "eager"}
        start, *documents = calls
        assert start["mask"] is None and start["logit_rows"] == 1
        for call in documents:
            assert call["mask"].dim() == 4 and call["mask"].dtype == torch.float32
            assert call["logit_rows"] == 3 == len(call["keep"])  # the three sentence suffixes only
        assert all(c["hooks"] == 0 for c in calls)
        calls.clear()
        vector = (head.weight[engine.positive_id] - head.weight[engine.negative_id]).detach().numpy()
        engine.probabilities(prompts, "packed", readout=(vector, 0.0))
        assert all(c["hooks"] == 1 for c in calls)  # the readout reads the hidden states: then, and only then
    finally:
        for handle in handles:
            handle.remove()
    assert len(head._forward_hooks) == 0


def test_a_call_made_during_another_call_leaves_each_its_own_mode(tok, model):
    """The mode (two-way probability, readout, hidden states) is an argument of the call, not a
    field of the engine: a probabilities() call that starts while hidden_states() runs (another
    thread sharing the engine, here a hook inside the first forward pass) changes neither."""
    prompts = _grouped(tok)
    engine = YesNoEngine(model, tok, batch_size=2)
    hidden, probabilities = engine.hidden_states(prompts, "padded"), engine.probabilities(prompts[:2], "padded")
    inner: list[np.ndarray] = []
    started: list[bool] = []

    def nested(_module, _args):
        if not started:
            started.append(True)
            inner.append(engine.probabilities(prompts[:2], "padded"))

    handle = model.register_forward_pre_hook(nested)
    try:
        got = engine.hidden_states(prompts, "padded")
    finally:
        handle.remove()
    assert got.shape == hidden.shape
    np.testing.assert_allclose(got, hidden, atol=1e-6)
    np.testing.assert_allclose(inner[0], probabilities, atol=1e-6)


# -- the one causal-LM call of both engines: the same logits (and hidden states) whether the model
# takes ``logits_to_keep`` or the call slices the logits itself

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
