"""The fusion trainer end to end on tiny data: loss goes down, the saved model scores like the
trainer, --resume continues, and the evaluation file is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragsift.cli import main
from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob
from ragsift.training.command import TrainOptions, run_training

CONFIG = """
[trainer]
name = "fusion"
steps = {steps}
min_samples_leaf = 5

[data]
train = "{train}"
dev = "{dev}"
limit = 12
dev_limit = 6

[training]
output = "{output}"
checkpoint_every = 5
"""


def _config(tmp_path: Path, data_dir: Path, steps: int, output: Path, name: str = "tiny.toml",
            train: str = "hotpotqa-train-sf100.json") -> Path:
    path = tmp_path / name
    path.write_text(CONFIG.format(steps=steps, train=data_dir / train, dev=data_dir / "hotpotqa-dev-ircot52-sf.json", output=output))
    return path


def test_train_command_writes_model_report_and_card(tmp_path, data_dir):
    out = tmp_path / "model"
    assert main(["train", "-c", str(_config(tmp_path, data_dir, 15, out)), "-q"]) == 0
    for name in ("fusion.json", "report.json", "loss.png", "threshold.png", "card.json", "README.md"):
        assert (out / name).is_file(), name
    report = json.loads((out / "report.json").read_text())
    history = report["history"]
    assert len(history) == 15 and history[-1]["train_loss"] < history[0]["train_loss"]
    card = json.loads((out / "card.json").read_text())
    assert card["data"]["train"]["questions"] == 12 and len(card["data"]["train"]["sha256"]) == 64
    assert card["hyperparameters"]["steps"] == 15 and card["training_seconds"] > 0
    assert 0.5 < card["report"]["roc_auc"] <= 1.0
    assert {"ragsift_version", "git", "created_at", "packages"} <= set(card)  # ragsift.provenance.stamp()
    assert set(card["report"]["confusion"]) <= {"positive", "hard_negative", "distractor_negative"}
    assert "ROC-AUC" in (out / "README.md").read_text()
    # a checkpoint is there: a second run must resume or choose another folder
    with pytest.raises(ConfigError, match="--resume"):
        run_training(TrainOptions(config=str(_config(tmp_path, data_dir, 15, out)), progress=False))


def test_saved_model_scores_like_the_trainer(tmp_path, data_dir):
    trainer = get_registry().create("trainer", "fusion", {"steps": 8, "min_samples_leaf": 5})
    train = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=10))
    dev = list(load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json", limit=4))
    result = trainer.train(TrainingJob(train=train, dev=dev, output=tmp_path / "m", progress=False))
    assert result.dev is not None
    scorer = get_registry().create("scorer", "learned-fusion", {"model": str(tmp_path / "m")})
    splitter = PresplitSplitter(fallback="sentencizer")
    for example, expected in zip(dev, result.dev.scores, strict=True):
        assert np.array_equal(scorer.score(example, splitter.split_all(example.documents)), expected)


def test_resume_continues_from_the_checkpoint(tmp_path, data_dir):
    fresh = tmp_path / "fresh"
    run_training(TrainOptions(config=str(_config(tmp_path, data_dir, 20, fresh, "a.toml")), progress=False))
    resumed = tmp_path / "resumed"
    run_training(TrainOptions(config=str(_config(tmp_path, data_dir, 10, resumed, "b.toml")), progress=False))
    features_cached = sorted(p.name for p in (tmp_path / "resumed.work" / "cache").iterdir())
    card = run_training(TrainOptions(config=str(_config(tmp_path, data_dir, 20, resumed, "c.toml")), resume=True, progress=False))
    assert card["resumed"] and card["report"]["steps"] == 20
    assert (resumed / "fusion.json").read_text() == (fresh / "fusion.json").read_text()
    assert sorted(p.name for p in (tmp_path / "resumed.work" / "cache").iterdir()) == features_cached  # features were reused


def test_evaluation_file_is_refused(tmp_path, data_dir):
    from ragsift.datasets import bundled_sample_path

    config = _config(tmp_path, data_dir, 5, tmp_path / "m")
    text = config.read_text().replace(str(data_dir / "hotpotqa-dev-ircot52-sf.json"), str(bundled_sample_path()))
    config.write_text(text)
    assert main(["train", "-c", str(config), "-q"]) == 2
    assert not (tmp_path / "m").exists()


def test_train_and_dev_must_not_overlap(tmp_path, data_dir):
    config = _config(tmp_path, data_dir, 5, tmp_path / "m", train="hotpotqa-dev-ircot52-sf.json")
    with pytest.raises(ConfigError, match="same file|both train and dev"):
        run_training(TrainOptions(config=str(config), progress=False))


def test_shipped_model_and_config_load():
    from ragsift.config import load_config
    from ragsift.testing import presplit_sentences, sample_example

    config = load_config("fusion-trained")
    config.validate_all()
    compressors = config.build_compressors()
    scorer = compressors["fusion-trained"].scorer
    example = sample_example()
    scores = scorer.score(example, presplit_sentences(example))
    assert scores.shape == (len(presplit_sentences(example)),) and np.all((scores >= 0) & (scores <= 1))
    card = json.loads((Path(__file__).resolve().parents[2] / "models" / "fusion-trained" / "card.json").read_text())
    # the config's threshold is the one chosen on the development questions
    assert compressors["fusion-trained"].selector.params.threshold == card["report"]["chosen"]["selector"]["threshold"]


def test_a_labeler_is_refused(tmp_path, data_dir):
    config = _config(tmp_path, data_dir, 5, tmp_path / "m")
    config.write_text(config.read_text() + '\n[labeler]\nname = "exit-pairs"\n')
    with pytest.raises(ConfigError, match="uses no"):
        run_training(TrainOptions(config=str(config), progress=False))
    assert not (tmp_path / "m").exists()  # refused before anything is written
