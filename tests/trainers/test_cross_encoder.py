"""The cross-encoder trainer on a tiny random-weight BERT: loss goes down, the saved folder scores
like the trainer, and an interrupted run resumes to the same weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
from interrupted_training import Interrupted, InterruptedJob
from tiny_bert import tiny_bert_and_data

from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tiny_bert_and_data(tmp_path_factory.mktemp("bert"), train_limit=4, dev_limit=2)


def _trainer(base: str, steps: int):
    return get_registry().create("trainer", "cross-encoder", {
        "base_model": base, "steps": steps, "batch_size": 8, "learning_rate": 3e-3, "warmup_ratio": 0.0,
        "max_length": 96, "device": "cpu"})


@pytest.mark.slow
def test_loss_goes_down_and_the_saved_model_scores_like_the_trainer(tmp_path, data):
    train, dev, base = data
    result = _trainer(base, 30).train(TrainingJob(train=train, dev=dev, output=tmp_path / "ce", progress=False, checkpoint_every=10))
    losses = [h["train_loss"] for h in result.history]
    assert len(losses) == 30 and np.mean(losses[-5:]) < np.mean(losses[:5])
    assert (tmp_path / "ce" / "model.safetensors").is_file() and not list((tmp_path / "ce").glob("*.bin"))
    config = json.loads((tmp_path / "ce" / "config.json").read_text())
    assert len(config["id2label"]) == 1  # one logit
    scorer = get_registry().create("scorer", "cross-encoder", {"model": str(tmp_path / "ce"), "device": "cpu", "max_length": 96})
    splitter = PresplitSplitter(fallback="sentencizer")
    assert result.dev is not None
    for example, expected in zip(dev, result.dev.scores, strict=True):
        got = scorer.score(example, splitter.split_all(example.documents))
        assert np.allclose(got, expected, atol=1e-6)


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path, data):
    from safetensors.torch import load_file

    train, _, base = data
    _trainer(base, 12).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=4))
    with pytest.raises(Interrupted):
        _trainer(base, 12).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", stop_bar="cross-encoder",
                                                checkpoint_every=4, stop_after=6))
    assert json.loads((tmp_path / "cut.work" / "checkpoint" / "state.json").read_text())["step"] == 4
    result = _trainer(base, 12).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                  checkpoint_every=4, resume=True))
    assert [h["step"] for h in result.history] == list(range(1, 13))
    fresh = load_file(str(tmp_path / "fresh" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "cut" / "model.safetensors"))
    assert fresh.keys() == resumed.keys()
    for key in fresh:
        assert np.allclose(fresh[key].numpy(), resumed[key].numpy(), atol=1e-6), key
