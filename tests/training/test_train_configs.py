from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.errors import ConfigError
from ragsift.registry import build_plugin
from ragsift.training.config import load_train_config, resolve_path

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "train").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_training_configs_build(path):
    config = load_train_config(path)
    build_plugin("trainer", config.trainer, str(path))
    if config.labeler is not None:
        build_plugin("labeler", config.labeler, str(path))
    assert resolve_path(config.data.train).is_file()
    if config.data.dev is None:  # a model whose selection is chosen elsewhere says where, on development questions
        assert "development pool" in config.description and "configs/dev/" in config.description
    else:
        assert resolve_path(config.data.dev).is_file()


def test_unknown_keys_and_missing_configs_are_clear(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[trainer]\nname = "fusion"\n[data]\ntrain = "x"\n[training]\noutput = "o"\nepochs = 3\n')
    with pytest.raises(ConfigError, match="epochs"):
        load_train_config(bad)
    with pytest.raises(ConfigError, match=r"No training config 'no-such-config'.*configs/train/ \(.*fusion"):
        load_train_config("no-such-config")
    broken = tmp_path / "broken.toml"
    broken.write_text("[trainer\n")
    with pytest.raises(ConfigError, match=rf"^{broken}: not valid TOML"):
        load_train_config(broken)


def test_a_name_finds_the_file_in_configs_train():
    assert load_train_config("fusion").source == load_train_config("fusion.toml").source
    assert Path(load_train_config("fusion").source).resolve() == (CONFIGS[0].parent / "fusion.toml").resolve()


def test_the_judge_trained_by_ecorag_judge_is_the_judge_of_ecorag_trained():
    """configs/train/ecorag-judge.toml trains the readout of configs/ecorag-trained.toml's judge and
    ranks with its scorer: the copies must not drift apart; the config loads the shipped readout."""
    from ragsift.config import load_config
    from ragsift.lm.readout import load_readout

    config = load_train_config("ecorag-judge")
    compressor = load_config("ecorag-trained").compressor_specs()["ecorag"]
    judge = dict(compressor["selector"]["judge"])
    readout = judge.pop("readout")
    assert readout == f"{config.training.output}/readout.safetensors"
    assert config.trainer["judge"] == judge
    assert config.trainer["ranker"] == compressor["scorer"]
    weight, _ = load_readout(str(resolve_path(readout)))
    assert tuple(weight.shape) == (576,)  # SmolLM2-135M's hidden size


def test_a_training_config_includes_another_and_changes_only_what_it_names(tmp_path):
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    (base_dir / "train.json").write_text("[]")
    (base_dir / "base.toml").write_text(
        'description = "base"\n[trainer]\nname = "fusion"\nsteps = 30\nlearning_rate = 0.1\n'
        '[data]\ntrain = "train.json"\nlimit = 80\n[training]\noutput = "models/a"\nseed = 3\n')
    variant = tmp_path / "variant.toml"
    variant.write_text('include = "base/base.toml"\ndescription = "twice the questions"\n'
                       '[trainer]\nsteps = 60\n[data]\nlimit = 160\n[training]\noutput = "models/b"\n')
    config = load_train_config(variant)
    assert config.description == "twice the questions"
    assert config.trainer == {"name": "fusion", "steps": 60, "learning_rate": 0.1}
    assert config.data.limit == 160 and config.training.seed == 3 and config.training.output == "models/b"
    assert config.data.train == str((base_dir / "train.json").resolve())  # anchored in the base's folder
    assert config.included == [str((base_dir / "base.toml").resolve())]
    assert load_train_config(base_dir / "base.toml").included == []
    (tmp_path / "loop.toml").write_text('include = "loop.toml"\n')
    with pytest.raises(ConfigError, match="cycle"):
        load_train_config(tmp_path / "loop.toml")


def test_the_160_question_readout_config_is_the_80_question_one_but_for_limit_and_output():
    small, large = load_train_config("exit-readout-qwen0.5b"), load_train_config("exit-readout-qwen0.5b-160")
    assert large.included and Path(large.included[0]).name == "exit-readout-qwen0.5b.toml"
    assert (large.trainer, large.labeler, large.data.train) == (small.trainer, small.labeler, small.data.train)
    assert (small.data.limit, large.data.limit) == (80, 160)
    assert large.training.output == "models/exit-readout-qwen0.5b-160"


def test_the_1_5b_readout_config_is_the_0_5b_recipe_on_the_readers_model():
    small, large = load_train_config("exit-readout-qwen0.5b"), load_train_config("exit-readout-qwen1.5b-160")
    assert large.included and Path(large.included[0]).name == "exit-readout-qwen0.5b.toml"
    assert {**large.trainer, "base_model": small.trainer["base_model"]} == small.trainer
    assert large.trainer["base_model"] == "split:qwen2.5-coder-1.5b-instruct"  # the main job's reader model
    assert (large.labeler, large.data.train, large.data.limit) == (small.labeler, small.data.train, 160)
    assert large.training.output == "models/exit-readout-qwen1.5b-160"
