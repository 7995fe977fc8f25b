"""Every run config shipped in configs/ and configs/tuned/ (and the development ones of configs/dev/,
which stay out of the wheel) validates as `ragsift config validate`
checks it: its plugins build, its [evaluation] table fits its labels, and every local model file it
names is there (training configs: tests/training/test_train_configs.py). The configs of the published
models load them by Hub id: offline, their only problem is that model, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.config import load_config
from ragsift.evaluation.run.config_check import config_problems

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
#: configs that name a model by Hugging Face Hub id (for users who have it)
HUB_MODELS = {"ecorag.toml", "exit.toml", "llmlingua2.toml", "longllmlingua.toml", "provence.toml",
              "recomp-extractive.toml", "selective-context.toml"}
SHIPPED = sorted([*CONFIGS.glob("*.toml"), *(CONFIGS / "tuned").glob("*.toml"), *(CONFIGS / "dev").glob("*.toml")])


def test_the_shipped_configs_are_found():
    names = {path.name for path in SHIPPED}
    assert {"quickstart.toml", "baselines.toml", "exit-trained.toml", "exit-trained-threshold.toml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=[p.relative_to(CONFIGS).as_posix() for p in SHIPPED])
def test_a_shipped_config_validates(path, monkeypatch):
    monkeypatch.chdir(CONFIGS.parent)  # relative data and model paths are the repository's
    problems = config_problems(load_config(path))
    hub = [p for p in problems if "a Hugging Face Hub id" in p and "the Hub is offline" in p]
    assert [p for p in problems if p not in hub] == []
    assert not hub or path.name in HUB_MODELS, hub
