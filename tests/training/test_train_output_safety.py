"""Issue 24, cases 2, 6 and 13 (fusion): ``ragsift train`` never overwrites a folder that is not
empty unasked, never writes into the shipped ``models/`` by default, names an unreadable
checkpoint or cache file with what to do, and leaves no folder behind when the data is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragsift.cli import main

SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "models"

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


def _config(tmp_path: Path, data_dir: Path, output: Path | str, steps: int = 5, train: Path | None = None) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(CONFIG.format(steps=steps, train=train or data_dir / "hotpotqa-train-sf100.json",
                                  dev=data_dir / "hotpotqa-dev-ircot52-sf.json", output=output))
    return path


def _tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_that_is_not_empty_is_refused_unless_force(tmp_path, data_dir, capsys):
    out = tmp_path / "model"
    out.mkdir()
    (out / "README.md").write_text("my own notes\n")
    (out / "card.json").write_text("{}\n")
    before = _tree_digest(out)
    assert main(["train", "-c", str(_config(tmp_path, data_dir, tmp_path / "unused")), "--output", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"--output {out} is not empty" in err and "--force" in err, err
    assert _tree_digest(out) == before
    assert main(["train", "-c", str(_config(tmp_path, data_dir, tmp_path / "unused")), "--output", str(out), "-q",
                 "--force"]) == 0
    assert (out / "fusion.json").is_file() and json.loads((out / "card.json").read_text())["trainer"]["name"] == "fusion"


@pytest.fixture
def shipped_model(tmp_path):
    """The shipped ``models/fusion-trained``, put back byte for byte afterwards should a failing
    run have replaced it (as ``ragsift train`` did before issue 24)."""
    import shutil

    shipped = SHIPPED_MODELS / "fusion-trained"
    assert (shipped / "fusion.json").is_file()
    backup = tmp_path / "shipped-backup"
    shutil.copytree(shipped, backup)
    yield shipped
    if _tree_digest(shipped) != _tree_digest(backup):
        shutil.rmtree(shipped)
        shutil.copytree(backup, shipped)


def test_the_shipped_model_is_not_the_default_output(tmp_path, data_dir, monkeypatch, capsys, shipped_model):
    shipped = shipped_model
    before = _tree_digest(shipped)
    config = _config(tmp_path, data_dir, shipped)  # as configs/train/fusion.toml, run at the project root
    monkeypatch.chdir(tmp_path)
    assert main(["train", "-c", str(config)]) == 0
    err = capsys.readouterr().err
    assert "not the shipped model" in err and "--force" in err, err
    assert (tmp_path / "runs" / "train" / "fusion-trained" / "fusion.json").is_file()
    assert _tree_digest(shipped) == before
    # named, it is still refused without --force: it is not empty
    assert main(["train", "-c", str(config), "--output", str(shipped), "-q"]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert _tree_digest(shipped) == before


def test_a_truncated_feature_cache_block_is_named_with_what_to_do(tmp_path, data_dir, capsys):
    out = tmp_path / "model"
    config = _config(tmp_path, data_dir, out, steps=10)
    assert main(["train", "-c", str(config), "-q"]) == 0
    block = sorted((tmp_path / "model.work" / "cache").glob("train-*.safetensors"))[0]
    block.write_bytes(block.read_bytes()[: block.stat().st_size // 2])  # a kill during a non-atomic write
    assert main(["train", "-c", str(config), "-q", "--resume"]) == 2
    err = capsys.readouterr().err
    assert str(block) in err and "Delete" in err and "--resume" in err and "a bug" not in err, err
    block.unlink()
    assert main(["train", "-c", str(config), "-q", "--resume"]) == 0  # as the message says


def test_an_unreadable_checkpoint_state_is_named(tmp_path, data_dir, capsys):
    out = tmp_path / "model"
    config = _config(tmp_path, data_dir, out, steps=10)
    assert main(["train", "-c", str(config), "-q"]) == 0
    state = tmp_path / "model.work" / "checkpoint" / "boosting.json"
    state.write_text(state.read_text()[:100])
    assert main(["train", "-c", str(config), "-q", "--resume"]) == 2
    err = capsys.readouterr().err
    assert str(state) in err and "Delete" in err and "a bug" not in err, err


def test_cache_blocks_are_written_atomically(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    from ragsift.trainers.checkpoint import save_tensors

    path = tmp_path / "block.safetensors"

    def half_then_fail(tensors, name):
        save_file(tensors, name)
        Path(name).write_bytes(Path(name).read_bytes()[:10])
        raise KeyboardInterrupt  # killed mid-write

    with pytest.raises(KeyboardInterrupt):
        save_tensors(path, {"x": np.zeros(3)}, half_then_fail)
    assert list(tmp_path.iterdir()) == []  # neither a truncated block nor a temporary file


def test_fusion_data_without_both_labels_names_the_file_and_leaves_no_folder(tmp_path, data_dir, capsys):
    records = json.loads((data_dir / "hotpotqa-train-sf100.json").read_text())[:12]
    for record in records:
        record["supporting_facts"] = []
    train = tmp_path / "no-evidence.json"
    train.write_text(json.dumps(records))
    out = tmp_path / "model"
    assert main(["train", "-c", str(_config(tmp_path, data_dir, out, train=train)), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{train}: FusionTrainer" in err and "both evidence and non-evidence" in err, err
    assert not out.exists()


def test_a_config_that_includes_another_is_kept_merged_beside_the_model(tmp_path, data_dir):
    import tomllib

    base = _config(tmp_path, data_dir, tmp_path / "unused", steps=5)
    variant = tmp_path / "variant.toml"
    out = tmp_path / "model"
    variant.write_text(f'include = "{base.name}"\n[data]\nlimit = 10\n[training]\noutput = "{out}"\n')
    assert main(["train", "-c", str(variant), "-q"]) == 0
    kept = (out / "train-config.toml").read_text()
    # paths as the card writes them: relative to the working directory or the model's folder's parent
    assert kept.startswith("# variant.toml with what it includes: tiny.toml\n"), kept
    table = tomllib.loads(kept)
    assert table["trainer"] == {"name": "fusion", "steps": 5, "min_samples_leaf": 5}
    assert table["data"]["limit"] == 10 and table["data"]["dev_limit"] == 6 and table["training"]["output"] == "model"
    assert json.loads((out / "card.json").read_text())["config_includes"] == ["tiny.toml"]
