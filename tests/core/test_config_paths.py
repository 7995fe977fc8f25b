"""Config names and relative paths resolve one documented way (issue 26, item 1): relative to the
config file's folder, then the working directory, then ragsift's shipped data; from any working
directory, in run and training configs alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.config import find_config, load_config
from ragsift.config_files import shipped_roots

REPO = Path(__file__).resolve().parents[2]


def test_sweep_validates_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["config", "validate", str(REPO / "configs" / "sweep.toml")]) == 0, capsys.readouterr().err
    assert load_config(REPO / "configs" / "sweep.toml").data().path == REPO / "data" / "training" / "hotpotqa-dev-pool.json"


def test_shipped_names_and_models_resolve_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import ragsift

    monkeypatch.chdir(tmp_path)
    assert find_config("fusion-trained") == REPO / "configs" / "fusion-trained.toml" and REPO in shipped_roots()
    assert find_config("configs/bm25.toml") == REPO / "configs" / "bm25.toml"  # the README's path, read as the name
    compressor = ragsift.load_compressor("bm25", scorer={"name": "learned-fusion", "model": "models/fusion-trained"})
    compressor.scorer.check_model_files()
    assert main(["config", "validate", "fusion-trained", "exit-trained", "ecorag-trained"]) == 0


def test_relative_paths_of_a_config_file_are_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from ragsift.datasets import bundled_sample_path

    folder = tmp_path / "project"
    shutil.copytree(REPO / "models" / "fusion-trained", folder / "mine")
    shutil.copy2(bundled_sample_path(), folder / "questions.json")
    (folder / "my.toml").write_text('[dataset]\nname = "hotpotqa"\npath = "questions.json"\n[compressor]\nname = "bm25"\n'
                                    '[compressor.scorer]\nname = "learned-fusion"\nmodel = "mine"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # not the config's folder
    config = load_config(folder / "my.toml")
    assert config.compressor["scorer"]["model"] == str(folder / "mine")
    assert config.data().path == folder / "questions.json"
    assert main(["config", "validate", str(folder / "my.toml")]) == 0


def test_training_config_data_is_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path):
    from ragsift.training.config import load_train_config

    shutil.copy2(data_dir / "hotpotqa-train-sf100.json", tmp_path / "train.json")
    (tmp_path / "t.toml").write_text('[trainer]\nname = "fusion"\n[data]\ntrain = "train.json"\n'
                                     'dev = "data/training/hotpotqa-dev-pool.json"\n[training]\noutput = "out"\n')
    monkeypatch.chdir(REPO / "ragsift")
    config = load_train_config(tmp_path / "t.toml")
    assert config.data.train == str(tmp_path / "train.json")
    assert config.data.dev == "data/training/hotpotqa-dev-pool.json"  # not beside the file: the shipped data's
