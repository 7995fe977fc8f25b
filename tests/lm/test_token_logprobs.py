"""The token log-probability engine: both layouts give the log-softmax of each sequence run alone;
``last`` returns only the final values; bad input is refused."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import ConfigError
from ragsift.lm.token_logprobs import TokenLogProbEngine, start_token_id
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer

SEQUENCES = [[1, 5, 7, 9, 11], [1, 20, 30], [1, 4, 4, 4, 4, 4, 4, 8], [2, 3, 6]]


def _alone(model, ids) -> np.ndarray:
    """log p(ids[t] | ids[:t]) from one unbatched forward pass, in float64."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    return torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


@pytest.fixture(scope="module", params=tiny.ARCHITECTURES)
def model(request):
    return tiny.build_tiny_lm(request.param, 64)


@pytest.mark.parametrize("layout", ["padded", "packed"])
@pytest.mark.parametrize("last", [None, 1, 2])
def test_layouts_equal_each_sequence_alone(model, layout, last):
    engine = TokenLogProbEngine(model, batch_size=2, row_tokens=10)
    got = engine.logprobs(SEQUENCES, layout, last=last)
    for ids, values in zip(SEQUENCES, got, strict=True):
        hand = _alone(model, ids)
        hand = hand if last is None else hand[-last:]
        assert values.shape == hand.shape
        np.testing.assert_allclose(values, hand, atol=2e-5)
    # padded: 2 batches of 2; packed: rows of 5+3 and 8 tokens, then 3
    assert engine.stats["forward_passes"] == (2 if layout == "padded" else 3)


def test_packing_runs_no_padding(model):
    engine = TokenLogProbEngine(model, batch_size=4, row_tokens=100)
    engine.logprobs(SEQUENCES, "packed")
    assert engine.stats == {"forward_passes": 1, "tokens": sum(map(len, SEQUENCES)), "layout": "packed"}
    engine.logprobs(SEQUENCES, "padded")
    assert engine.stats["tokens"] == 4 * max(map(len, SEQUENCES))


def test_bad_input_is_refused(model):
    engine = TokenLogProbEngine(model)
    with pytest.raises(ValueError, match="sequence 1 has 1 ids"):
        engine.logprobs([[1, 2], [3]])
    with pytest.raises(ValueError, match="last = 3"):
        engine.logprobs([[1, 2, 3]], last=3)
    with pytest.raises(ConfigError, match="unknown layout"):
        engine.logprobs([[1, 2]], "trunk")  # type: ignore[arg-type]


def test_start_token():
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    assert start_token_id(tok, "<|endoftext|>", "X") == 0
    assert start_token_id(tok, None, "X") == tok.bos_token_id
    with pytest.raises(ConfigError, match="X: start_token 'no such token' is not a token"):
        start_token_id(tok, "no such token", "X")
