"""The bridge-documents trainer on tiny data: it writes a model the scorer loads and ranks with as
the trainer did, it refuses the evaluation file under any name, and it trains on titles blanked."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragsift.cli import main
from ragsift.datasets import bundled_sample_path, load_examples
from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob
from ragsift.trainers.bridge_documents import training_rows
from ragsift.training.command import TrainOptions, run_training

CONFIG = """
[trainer]
name = "bridge-documents"
steps = 10
min_samples_leaf = 5

[data]
train = "{train}"
dev = "{dev}"
limit = 12
dev_limit = 6

[training]
output = "{output}"
"""


def _config(tmp_path: Path, train: Path, dev: Path, output: Path) -> Path:
    path = tmp_path / "bridge.toml"
    path.write_text(CONFIG.format(train=train, dev=dev, output=output))
    return path


def test_train_command_writes_a_model_the_scorer_ranks_with_as_the_trainer_did(tmp_path, data_dir):
    out = tmp_path / "model"
    config = _config(tmp_path, data_dir / "hotpotqa-train-sf100.json", data_dir / "hotpotqa-dev-ircot52-sf.json", out)
    assert main(["train", "-c", str(config), "-q"]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["scorer"]["name"] == "bridge-documents" and card["data"]["train"]["questions"] == 12
    within = card["extra"]["development_all_gold_within"]
    assert set(within) == {"2", "3", "4", "5"} and within["2"] <= within["3"] <= within["4"] <= within["5"]
    report = json.loads((out / "report.json").read_text())
    assert report["history"][-1]["train_loss"] < report["history"][0]["train_loss"]
    scorer = get_registry().create("scorer", "bridge-documents", {"model": str(out)})
    trainer = get_registry().create("trainer", "bridge-documents", {"steps": 10, "min_samples_leaf": 5})
    train = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=12))
    dev = list(load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json", limit=6))
    result = trainer.train(TrainingJob(train=train, dev=dev, output=tmp_path / "again", progress=False))
    assert result.dev is not None
    splitter = PresplitSplitter(fallback="sentencizer")
    for example, expected in zip(dev, result.dev.scores, strict=True):
        sentences = splitter.split_all(example.documents)
        scores = scorer.score(example, sentences)
        first = [next(i for i, s in enumerate(sentences) if s.doc_index == d) for d in range(len(example.documents))]
        assert np.array_equal(scores[first], expected)


def test_the_evaluation_file_is_refused_under_any_name(tmp_path, data_dir):
    copy = tmp_path / "renamed.json"
    shutil.copy(bundled_sample_path(), copy)
    config = _config(tmp_path, copy, data_dir / "hotpotqa-dev-ircot52-sf.json", tmp_path / "m")
    with pytest.raises(ConfigError, match="evaluation file"):
        run_training(TrainOptions(config=str(config), progress=False))
    assert not (tmp_path / "m" / "bridge-documents.json").exists()
    # its questions among the development data: refused too
    trainer = get_registry().create("trainer", "bridge-documents", {"steps": 2})
    train = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=4))
    held_out = list(load_examples(bundled_sample_path(), limit=1))
    with pytest.raises(ConfigError, match="evaluation file"):
        trainer.train(TrainingJob(train=train, dev=held_out, output=tmp_path / "n", progress=False))


def test_training_rows_cover_nothing_kept_each_gold_kept_and_a_wrong_first_choice(data_dir):
    from ragsift.scorers.bridge_features import BridgeFeatures
    from ragsift.trainers.bridge_documents import gold_documents

    example = next(iter(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=1)))
    features = BridgeFeatures({"bm25": {"name": "bm25"}})
    ctx = features.context(example, PresplitSplitter(fallback="sentencizer").split_all(example.documents))
    gold = gold_documents(example)
    xs, ys = training_rows(features, ctx, gold)
    n = len(example.documents)
    assert [len(x) for x in xs] == [n] + [n - 1] * (len(gold) + 1)
    assert ys[0].sum() == len(gold) and all(y.sum() == len(gold) - 1 for y in ys[1 : 1 + len(gold)])
    assert ys[-1].sum() == len(gold)  # a non-gold document kept: every gold one is still to find


def test_it_trains_and_ranks_with_every_title_blanked(tmp_path, data_dir):
    blank = [replace(e, documents=tuple(replace(d, title="") for d in e.documents))
             for e in load_examples(data_dir / "hotpotqa-train-sf100.json", limit=14)]
    trainer = get_registry().create("trainer", "bridge-documents", {"steps": 5, "min_samples_leaf": 5})
    result = trainer.train(TrainingJob(train=blank[:10], dev=blank[10:], output=tmp_path / "m", progress=False))
    assert result.dev is not None and all(np.all(np.isfinite(s)) for s in result.dev.scores)
    scorer = get_registry().create("scorer", "bridge-documents", {"model": str(tmp_path / "m")})
    sentences = PresplitSplitter(fallback="sentencizer").split_all(blank[10].documents)
    assert np.all(np.isfinite(scorer.score(blank[10], sentences)))
