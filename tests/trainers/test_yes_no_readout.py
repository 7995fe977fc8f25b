"""The readout-only Yes/No trainer and the scorer's ``readout`` on a tiny random-weight Llama: the
engine's readout of ``w_yes - w_no`` is the Yes/No probability, the fit's loss goes down, the saved
readout scores like the trainer, and an interrupted run resumes to the same readout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_causal_lm as tiny
from interrupted_training import Interrupted, InterruptedJob

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.lm import LAYOUTS
from ragsift.lm.readout import load_readout, save_readout
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import get_registry
from ragsift.scorers.causal_yes_no import CausalYesNoScorer
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob
from ragsift.trainers.yes_no_readout import fit_readout

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("tiny") / "llama", tiny.build_tiny_lm("llama", len(tok), seed=3), tok)


def test_the_readout_of_w_yes_minus_w_no_is_the_yes_no_probability(base, tmp_path):
    example, sentences = tiny.example()
    plain = CausalYesNoScorer(model=base, adapter="", device="cpu")
    expected = plain.score(example, sentences)
    weight = plain.engine.model.get_output_embeddings().weight.detach()
    vector = weight[plain.engine.positive_id] - weight[plain.engine.negative_id]
    save_readout(tmp_path / "r.safetensors", vector, 0.0)
    prompts = plain.prompts(example, sentences)
    hidden = plain.engine.hidden_states(prompts, "padded")
    assert hidden.shape == (len(sentences), weight.shape[1])
    assert np.allclose(1 / (1 + np.exp(-(hidden @ vector.double().numpy()))), expected, atol=1e-5)
    for layout in LAYOUTS:
        got = plain.engine.probabilities(prompts, layout, readout=(vector, 0.0))
        assert np.allclose(got, expected, atol=1e-5), layout
    scorer = CausalYesNoScorer(model=base, adapter="", device="cpu", readout=str(tmp_path / "r.safetensors"))
    assert np.allclose(scorer.score(example, sentences), expected, atol=1e-5)
    save_readout(tmp_path / "short.safetensors", vector[:10], 0.0)
    with pytest.raises(ConfigError, match="hidden size"):
        CausalYesNoScorer(model=base, adapter="", device="cpu", readout=str(tmp_path / "short.safetensors")).score(example, sentences)
    (tmp_path / "bad.safetensors").write_text("not tensors")
    with pytest.raises(ConfigError, match="bad.safetensors"):
        load_readout(str(tmp_path / "bad.safetensors"))


def test_fit_readout_separates_separable_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16)) * rng.uniform(0.1, 50, size=16) + rng.normal(size=16) * 10
    labels = (x[:, 3] / 50 - x[:, 7] / 20 > 0).astype(float)
    weight, bias, history = fit_readout(x, labels, 50, 1e-4)
    assert history[-1]["train_loss"] < 0.25 * history[0]["train_loss"] and history[-1]["train_accuracy"] >= 0.97
    assert np.mean(((x @ weight + bias) > 0) == labels) == history[-1]["train_accuracy"]


def _trainer(base: str):
    return get_registry().create("trainer", "yes-no-readout", {"base_model": base, "device": "cpu", "batch_size": 4,
                                                               "steps": 40, "l2": 1e-3, "overflow": "head-tail", "max_length": 256})


@pytest.mark.slow
def test_training_fits_and_the_saved_readout_scores_like_the_trainer(base, tmp_path):
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=4))
    dev = list(load_examples(DATA / "hotpotqa-dev-ircot52-sf.json", limit=2))
    result = _trainer(base).train(TrainingJob(train=train, dev=dev, output=tmp_path / "ro", progress=False, checkpoint_every=2))
    losses = [h["train_loss"] for h in result.history]
    assert losses[-1] < 0.5 * losses[0] and result.history[-1]["train_accuracy"] >= 0.9
    assert result.artefacts == ["readout.safetensors"] and result.scorer["readout"] == str(tmp_path / "ro" / "readout.safetensors")
    scorer = get_registry().create("scorer", "causal-yes-no", {k: v for k, v in result.scorer.items() if k != "name"} | {"device": "cpu"})
    splitter = PresplitSplitter(fallback="sentencizer")
    assert result.dev is not None and len(result.dev.scores) == 2
    for example, expected in zip(dev, result.dev.scores, strict=True):
        assert np.allclose(scorer.score(example, splitter.split_all(example.documents)), expected, atol=1e-5)


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_readout(base, tmp_path):
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=3))
    _trainer(base).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=2))
    with pytest.raises(Interrupted):
        _trainer(base).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", stop_bar="features", checkpoint_every=2,
                                            stop_after=3))
    assert json.loads((tmp_path / "cut.work" / "checkpoint" / "state.json").read_text())["records"] > 0
    from safetensors.numpy import load_file

    assert load_file(str(tmp_path / "cut.work" / "checkpoint" / "features.safetensors"))["features"].shape[0] == 2 * 4
    _trainer(base).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False, checkpoint_every=2, resume=True))
    fresh = load_readout(str(tmp_path / "fresh" / "readout.safetensors"))
    resumed = load_readout(str(tmp_path / "cut" / "readout.safetensors"))
    assert np.allclose(fresh[0].numpy(), resumed[0].numpy(), atol=1e-6) and abs(fresh[1] - resumed[1]) < 1e-6
