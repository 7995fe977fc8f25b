"""Issue 53 row 12: the fusion trainer's feature-cache blocks carry a content checksum. An edited
block (or one without a checksum) is computed again, named in a warning, so the model is the one
its data gives; NaN and infinite features are refused naming the file, the question and the row."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from ragsift.cli import main

CONFIG = """
[trainer]
name = "fusion"
steps = 10
min_samples_leaf = 5

[data]
train = "{train}"
limit = 12

[training]
output = "{output}"
checkpoint_every = 5
"""


@pytest.fixture
def trained(tmp_path: Path, data_dir: Path) -> tuple[Path, Path, bytes]:
    """A tiny fusion model trained once: (its config, its output folder, its fusion.json bytes)."""
    out = tmp_path / "model"
    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG.format(train=data_dir / "hotpotqa-train-sf100.json", output=out))
    assert main(["train", "-c", str(config), "-q"]) == 0
    return config, out, (out / "fusion.json").read_bytes()


def retrain(config: Path, out: Path) -> int:
    """Train again into the same folder from the cached features (the boosting checkpoint gone)."""
    shutil.rmtree(out.with_name(f"{out.name}.work") / "checkpoint")
    return main(["train", "-c", str(config), "-q", "--force"])


def the_block(out: Path) -> Path:
    blocks = sorted((out.with_name(f"{out.name}.work") / "cache").glob("train-*.safetensors"))
    assert blocks, "no feature cache block"
    return blocks[0]


def checksum(tensors: dict[str, np.ndarray]) -> str:
    """The documented checksum, written out here on its own: names, dtypes, shapes, bytes."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        digest.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def test_a_block_holds_the_checksum_of_its_content(trained: tuple[Path, Path, bytes]) -> None:
    block = the_block(trained[1])
    with safe_open(str(block), framework="np") as f:
        stored = (f.metadata() or {}).get("ragsift_sha256")
    assert stored == checksum(load_file(str(block)))


@pytest.mark.parametrize("edit", ["bytes", "no-checksum"])
def test_an_edited_block_is_computed_again_with_a_warning(trained: tuple[Path, Path, bytes], edit: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    config, out, model = trained
    block = the_block(out)
    if edit == "bytes":  # the values changed in place, the header (and its checksum) kept
        data = bytearray(block.read_bytes())
        data[-800:] = np.full(100, 1e6).tobytes()
        block.write_bytes(bytes(data))
    else:  # rewritten by hand (or by a ragsift before checksums): no checksum at all
        tensors = load_file(str(block))
        save_file({k: v * 0 + 1e6 if k == "x0" else v for k, v in tensors.items()}, str(block))
    with caplog.at_level("WARNING"):
        assert retrain(config, out) == 0
    warned = [r.getMessage() for r in caplog.records if str(block) in r.getMessage()]
    assert warned and "computed again" in warned[0], caplog.text
    assert ("does not match its content checksum" if edit == "bytes" else "has no content checksum") in warned[0]
    assert (out / "fusion.json").read_bytes() == model  # the model its data gives, not the edit's
    with safe_open(str(block), framework="np") as f:  # and the block is written again, whole
        assert (f.metadata() or {}).get("ragsift_sha256") == checksum(load_file(str(block)))


def test_an_infinity_in_a_checksummed_block_names_the_file_and_row(trained: tuple[Path, Path, bytes],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    config, out, _ = trained
    block = the_block(out)
    tensors = load_file(str(block))
    tensors["x1"][2, 0] = np.inf  # edited, and the checksum recomputed: a deliberate edit gets past it
    save_file(tensors, str(block), metadata={"ragsift_sha256": checksum(tensors)})
    capsys.readouterr()
    assert retrain(config, out) == 2
    err = capsys.readouterr().err
    assert str(block) in err and "(x1), sentence row 2" in err and "feature 'bm25' is inf" in err, err
    assert "a bug" not in err


def test_an_infinite_computed_feature_names_the_data_file_and_row(tmp_path: Path, data_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from ragsift.scorers.bm25 import BM25Scorer

    real = BM25Scorer.score

    def overflowing(self, example, sentences):  # type: ignore[no-untyped-def]
        scores = np.array(real(self, example, sentences), dtype=np.float64)
        scores[-1] = np.inf
        return scores

    monkeypatch.setattr(BM25Scorer, "score", overflowing)
    train = data_dir / "hotpotqa-train-sf100.json"
    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG.format(train=train, output=tmp_path / "model"))
    assert main(["train", "-c", str(config), "-q"]) == 2
    err = capsys.readouterr().err
    first = json.loads(train.read_text())[0]["_id"]
    assert str(train) in err and f"question '{first}' (x0), sentence row" in err, err
    assert "feature 'bm25' is inf" in err, err  # the component's own score, not what is derived from it
    assert "a bug" not in err
    assert not list((tmp_path / "model.work" / "cache").glob("*.safetensors"))  # nothing non-finite cached
