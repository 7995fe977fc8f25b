"""The LoRA Yes/No trainer on a tiny random-weight Llama: loss goes down, the saved adapter loads
into the ``causal-yes-no`` scorer and scores like the trainer, and an interrupted run resumes to the
same adapter."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_causal_lm as tiny
from interrupted_training import Interrupted, InterruptedJob

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("tiny") / "llama", tiny.build_tiny_lm("llama", len(tok), seed=5), tok)


def _trainer(base: str, steps: int, **extra):
    return get_registry().create("trainer", "yes-no-lora", {
        "base_model": base, "steps": steps, "batch_size": 4, "grad_accum": 1, "r": 4, "alpha": 8, "learning_rate": 1e-2,
        "warmup_ratio": 0.0, "device": "cpu", "overflow": "head-tail", "max_length": 256, **extra})


def test_defaults_are_exits_recipe_and_half_precision_needs_cuda():
    config = get_registry().create("trainer", "yes-no-lora", {}).config()
    assert (config["r"], config["alpha"], config["dropout"], config["learning_rate"], config["weight_decay"]) == (64, 32, 0.05, 1e-5, 0.1)
    assert (config["warmup_ratio"], config["epochs"], config["batch_size"], config["grad_accum"]) == (0.03, 1.0, 8, 8)
    import torch

    from ragsift.trainers.yes_no_lora import _precision

    assert _precision("auto", torch.device("cpu")) is None
    with pytest.raises(ConfigError, match="CUDA"):
        _precision("bf16", torch.device("cpu"))


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["vocabulary", "two-way"])
def test_loss_goes_down_and_the_adapter_scores_like_the_trainer(base, tmp_path, loss):
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=2))
    dev = list(load_examples(DATA / "hotpotqa-dev-ircot52-sf.json", limit=1))
    job = TrainingJob(train=train, dev=dev, output=tmp_path / "lora", progress=False, checkpoint_every=5)
    result = _trainer(base, 8, loss=loss).train(job)
    losses = [h["train_loss"] for h in result.history]
    assert len(losses) == 8 and np.mean(losses[-3:]) < 0.7 * np.mean(losses[:3])
    assert (tmp_path / "lora" / "adapter_model.safetensors").is_file() and not list((tmp_path / "lora").glob("*.bin"))
    scorer = get_registry().create("scorer", "causal-yes-no", {k: v for k, v in result.scorer.items() if k != "name"} | {"device": "cpu"})
    splitter = PresplitSplitter(fallback="sentencizer")
    assert result.dev is not None
    plain = get_registry().create("scorer", "causal-yes-no",
                                  {"model": base, "adapter": "", "device": "cpu", "overflow": "head-tail", "max_length": 256})
    for example, expected in zip(dev, result.dev.scores, strict=True):
        sentences = splitter.split_all(example.documents)
        got = scorer.score(example, sentences)
        assert type(scorer._model).__name__.startswith("Peft")
        assert np.allclose(got, expected, atol=1e-5)
        assert np.abs(got - plain.score(example, sentences)).max() > 1e-3  # the adapter changed the scores


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_adapter(base, tmp_path):
    from safetensors.torch import load_file

    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=2))
    _trainer(base, 6).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=2))
    with pytest.raises(Interrupted):
        _trainer(base, 6).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", stop_bar="yes-no-lora",
                                               checkpoint_every=2, stop_after=3))
    assert json.loads((tmp_path / "cut.work" / "checkpoint" / "state.json").read_text())["step"] == 2
    result = _trainer(base, 6).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                 checkpoint_every=2, resume=True))
    assert [h["step"] for h in result.history] == list(range(1, 7))
    fresh = load_file(str(tmp_path / "fresh" / "adapter_model.safetensors"))
    resumed = load_file(str(tmp_path / "cut" / "adapter_model.safetensors"))
    assert fresh.keys() == resumed.keys() and fresh
    for key in fresh:
        assert np.allclose(fresh[key].numpy(), resumed[key].numpy(), atol=1e-6), key
