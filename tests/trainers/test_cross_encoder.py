"""The cross-encoder trainer on a tiny random-weight BERT: loss goes down, the saved folder scores
like the trainer, and an interrupted run resumes to the same weights."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from interrupted_training import Interrupted, InterruptedJob

from ragsift.datasets import load_examples
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob


def _tiny_bert(folder: Path, texts: list[str]) -> str:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})[:400]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    data_dir = Path(__file__).resolve().parents[1] / "data"
    train = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=4))
    dev = list(load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json", limit=2))
    texts = [e.question for e in train + dev] + [d.text for e in train + dev for d in e.documents]
    return train, dev, _tiny_bert(tmp_path_factory.mktemp("bert"), texts)


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
    assert json.loads((tmp_path / "cut" / "checkpoint" / "state.json").read_text())["step"] == 4
    result = _trainer(base, 12).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                  checkpoint_every=4, resume=True))
    assert [h["step"] for h in result.history] == list(range(1, 13))
    fresh = load_file(str(tmp_path / "fresh" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "cut" / "model.safetensors"))
    assert fresh.keys() == resumed.keys()
    for key in fresh:
        assert np.allclose(fresh[key].numpy(), resumed[key].numpy(), atol=1e-6), key
