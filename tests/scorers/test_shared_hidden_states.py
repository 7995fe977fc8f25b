"""``share_hidden_states``: a zero-shot and a readout ``causal-yes-no`` scorer on the same model
run the model once, and score as they do alone (tiny random-weight Llama)."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.lm.readout import save_readout
from ragsift.lm.shared_hidden import SHARED_HIDDEN_STATES, SharedHiddenStates
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.scorers.causal_yes_no import CausalYesNoScorer


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("tiny") / "llama", tiny.build_tiny_lm("llama", len(tok), seed=7), tok)


@pytest.mark.parametrize("mode", ["prefix-shared", "reference"])
def test_zero_shot_and_readout_share_one_forward_pass_and_score_as_alone(base, tmp_path, mode):
    example, sentences = tiny.example()
    common = {"model": base, "adapter": "", "device": "cpu", "mode": mode}
    hidden = tiny.build_tiny_lm("llama", 10, seed=7).config.hidden_size
    rng = np.random.default_rng(0)
    save_readout(tmp_path / "r.safetensors", rng.normal(size=hidden), 0.3)
    alone_zero = CausalYesNoScorer(**common).score(example, sentences)
    alone_readout = CausalYesNoScorer(**common, readout=str(tmp_path / "r.safetensors")).score(example, sentences)
    SHARED_HIDDEN_STATES.clear()
    zero = CausalYesNoScorer(**common, share_hidden_states=True)
    trained = CausalYesNoScorer(**common, readout=str(tmp_path / "r.safetensors"), share_hidden_states=True)
    got_zero = zero.score(example, sentences)
    assert zero.stats["forward_passes"] > 0
    got_readout = trained.score(example, sentences)
    assert trained.stats["forward_passes"] == 0 and trained.stats["shared_hidden_states"] is True
    assert np.allclose(got_zero, alone_zero, atol=1e-5) and np.allclose(got_readout, alone_readout, atol=1e-5)
    assert not np.allclose(got_zero, got_readout, atol=1e-3)  # two different scorers, one forward pass
    # other prompts (fewer sentences) are another key: the model runs again
    trained.score(example, sentences[:2])
    assert trained.stats["forward_passes"] > 0


def test_the_store_drops_oldest_entries_and_never_answers_for_another_model():
    class Model:
        pass

    class Prompt:
        def __init__(self, ids):
            self.ids = ids

    store = SharedHiddenStates(max_bytes=2 * 8 * 4)  # two float64 rows of 4
    a, b = Model(), Model()
    store.put(a, "packed", [Prompt([1, 2])], np.zeros((1, 4)))
    store.put(a, "packed", [Prompt([3])], np.ones((1, 4)))
    assert store.get(a, "packed", [Prompt([1, 2])]) is not None and store.get(b, "packed", [Prompt([1, 2])]) is None
    assert store.get(a, "padded", [Prompt([1, 2])]) is None
    store.put(a, "packed", [Prompt([4])], np.ones((1, 4)))  # over the cap: the least recently used goes
    assert store.get(a, "packed", [Prompt([3])]) is None and store.get(a, "packed", [Prompt([1, 2])]) is not None
