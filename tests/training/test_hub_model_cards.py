"""Hub-portable trained models (issue 26, item 2): every shipped card carries Hugging Face YAML
metadata that ``huggingface_hub.ModelCard.load`` reads, with the metrics the card reports; no card
holds a machine path; a smoke run's card says it is one; checkpoints and caches stay out of the
model folder; the LoRA adapter names its base by Hub id and loads with ``AutoPeftModel`` where
that base is reachable (a local Hub cache, offline); ragsift's own files load from a Hub id."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from ragsift.errors import ConfigError
from ragsift.models import OFFLINE_MINILM, hub_id, resolve_model
from ragsift.training.card import write_card

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.parent for p in (REPO / "models").glob("*/card.json"))


def test_there_are_eight_shipped_models():
    assert [p.name for p in SHIPPED] == ["bridge-documents", "ecorag-judge", "ecorag-trained", "exit-readout-qwen0.5b",
                                         "exit-readout-qwen0.5b-160", "exit-readout-qwen1.5b-160", "exit-trained", "fusion-trained"]


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_model_card_load_reads_the_shipped_cards_metadata_and_metrics(folder: Path):
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    data = ModelCard.load(folder / "README.md").data
    assert data.library_name == "ragsift" and data.license == "apache-2.0" and data.datasets == ["hotpotqa/hotpot_qa"]
    assert data.base_model == hub_id(card["base_model"]) and (card["base_model"] is None) == (data.base_model is None)
    if card["data"]["development"] is None:  # trained without development questions: nothing was chosen, no metric to report
        assert "chosen" not in card["report"] and data.eval_results is None
        return
    chosen = card["report"]["chosen"]
    got = {r.metric_type: r.metric_value for r in data.eval_results}
    assert got == {"roc_auc": round(card["report"]["roc_auc"], 4), **{k: round(chosen[k], 4) for k in ("precision", "recall", "f1")}}
    assert f"({card['data']['development']['questions']} questions)" in data.eval_results[0].dataset_name


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_no_shipped_card_holds_a_machine_path_and_its_prose_names_its_data(folder: Path):
    texts = [(folder / name).read_text(encoding="utf-8") for name in ("card.json", "README.md")]
    for text in texts:
        assert not re.search(r"(?<![\w.])/(work|home|tmp|root|Users|var)/", text), folder
    card = json.loads(texts[0])
    train, dev = card["data"]["train"]["questions"], (card["data"]["development"] or {}).get("questions")
    said = f"This run: {train} training questions" + (f", {dev} development questions." if dev is not None else ".")
    assert said in texts[1]
    assert not {"checkpoint", "cache"} & {p.name for p in folder.iterdir()}


def _card(tmp_path: Path, limit: int | None) -> dict:
    return {"name": "m", "description": "Fitted on the 1,019 training questions.", "trainer": {"name": "fusion", "config": {}},
            "base_model": None, "scorer": {"name": "learned-fusion", "model": str(tmp_path / "m")}, "labels": "gold",
            "artefacts": ["fusion.json"], "data": {"train": {"path": str(tmp_path / "data" / "train.json"), "sha256": "0" * 64,
                                                            "questions": 3}, "development": None},
            "seed": 0, "hyperparameters": {}, "training_seconds": 1.0, "machine": "x", "ragsift_version": "0",
            "report": {"figures": []}, "command": f"ragsift train -c {tmp_path / 'c.toml'} --limit 3",
            "config": str(tmp_path / "c.toml"), "limit": limit}


def test_a_smoke_run_card_says_so_and_holds_no_absolute_path(tmp_path: Path):
    (tmp_path / "m").mkdir()
    write_card(tmp_path / "m", _card(tmp_path, 3))
    readme = (tmp_path / "m" / "README.md").read_text(encoding="utf-8")
    assert "**Smoke run (`--limit 3`).** This run: 3 training questions;" in readme
    assert str(tmp_path) not in readme and str(tmp_path) not in (tmp_path / "m" / "card.json").read_text(encoding="utf-8")
    card = json.loads((tmp_path / "m" / "card.json").read_text(encoding="utf-8"))
    assert card["scorer"]["model"] == "m" and card["config"] == "c.toml" and card["command"].endswith("-c c.toml --limit 3")
    assert ModelCard.load(tmp_path / "m" / "README.md").data.library_name == "ragsift"


def test_a_card_recorded_before_the_provenance_stamp_keeps_its_commit(tmp_path: Path):
    from ragsift.training.card import rewrite_card

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "card.json").write_text(json.dumps({**_card(tmp_path, None), "git_commit": "abc1234"}), encoding="utf-8")
    card = rewrite_card(tmp_path / "m")
    assert card["git"] == {"commit": "abc1234"} and "git_commit" not in card
    assert "(commit abc1234)" in (tmp_path / "m" / "README.md").read_text(encoding="utf-8")


def test_a_training_run_keeps_its_checkpoint_and_cache_beside_the_model_folder(tmp_path: Path, data_dir: Path):
    from ragsift.training.command import TrainOptions, run_training

    config = tmp_path / "tiny.toml"
    config.write_text(f'[trainer]\nname = "fusion"\nsteps = 5\nmin_samples_leaf = 5\n[data]\n'
                      f'train = "{data_dir / "hotpotqa-train-sf100.json"}"\ndev = "{data_dir / "hotpotqa-dev-ircot52-sf.json"}"\n'
                      f'limit = 6\ndev_limit = 3\n[training]\noutput = "{tmp_path / "model"}"\ncheckpoint_every = 2\n')
    run_training(TrainOptions(config=str(config), progress=False))
    assert (tmp_path / "model" / "fusion.json").is_file()
    assert not {"checkpoint", "cache"} & {p.name for p in (tmp_path / "model").iterdir()}
    assert (tmp_path / "model.work" / "checkpoint").is_dir() and (tmp_path / "model.work" / "cache").is_dir()


def test_the_shipped_adapter_names_its_base_by_hub_id():
    config = json.loads((REPO / "models" / "ecorag-trained" / "adapter" / "adapter_config.json").read_text(encoding="utf-8"))
    card = json.loads((REPO / "models" / "ecorag-trained" / "card.json").read_text(encoding="utf-8"))
    assert config["base_model_name_or_path"] == "sentence-transformers/all-MiniLM-L6-v2" == hub_id(card["base_model"])
    assert card["base_model"] == OFFLINE_MINILM  # ragsift's own offline location of the base, in a field of its own


@pytest.mark.slow
@pytest.mark.integration
def test_auto_peft_model_loads_the_shipped_adapter_given_a_local_base(tmp_path: Path):
    """The base reachable as the Hub id names it: the offline MiniLM package's files in a local Hub
    cache (HF_HUB_CACHE, HF_HUB_OFFLINE=1), as ``hf download`` would leave them."""
    base = Path(resolve_model(OFFLINE_MINILM).path)
    repo = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(base, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    adapter = REPO / "models" / "ecorag-trained" / "adapter"
    code = f"""
import torch
from peft import AutoPeftModel, PeftModel
from safetensors.torch import load_file
model = AutoPeftModel.from_pretrained({str(adapter)!r})
assert isinstance(model, PeftModel), type(model)
assert model.peft_config["default"].base_model_name_or_path == "sentence-transformers/all-MiniLM-L6-v2"
saved = load_file({str(adapter / "adapter_model.safetensors")!r})
state = {{k.replace(".default", ""): v for k, v in model.state_dict().items() if "lora_" in k}}
assert saved and all(any(k.endswith(name) for k in state) for name in saved), sorted(saved)[:3]
for name, tensor in saved.items():
    (match,) = [v for k, v in state.items() if k.endswith(name.removeprefix("base_model.model."))]
    assert torch.equal(match, tensor), name
print("loaded", len(saved))
"""
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == "loaded"


def _online_hub(monkeypatch: pytest.MonkeyPatch, calls: list[tuple], files: dict[str, Path]) -> None:
    import huggingface_hub

    import ragsift.model_check as model_check

    def download(repo_id, filename, revision=None, **_):
        calls.append((repo_id, filename, revision))
        return str(files[filename])

    monkeypatch.setattr(model_check, "_hub_offline", lambda: False)
    monkeypatch.setattr(model_check, "_hub_reachable", lambda endpoint: True)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)


def test_a_fusion_model_and_a_readout_load_from_a_hub_id_through_huggingface_hub(monkeypatch: pytest.MonkeyPatch):
    from ragsift.lm.readout import load_readout
    from ragsift.registry import get_registry

    calls: list[tuple] = []
    _online_hub(monkeypatch, calls, {"fusion.json": REPO / "models" / "fusion-trained" / "fusion.json",
                                     "readout.safetensors": REPO / "models" / "exit-trained" / "readout.safetensors"})
    scorer = get_registry().create("scorer", "learned-fusion", {"model": "acme/fusion-trained"})
    scorer.check_model_files()
    weight, _ = load_readout("hub:acme/exit-trained@v1", "test")
    assert calls == [("acme/fusion-trained", "fusion.json", None), ("acme/exit-trained", "readout.safetensors", "v1")]
    assert weight.dim() == 1


def test_a_hub_id_of_ragsifts_own_format_offline_is_the_clear_offline_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from ragsift.registry import get_registry

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    scorer = get_registry().create("scorer", "learned-fusion", {"model": "acme/not-cached-fusion"})
    with pytest.raises(ConfigError, match=r"acme/not-cached-fusion.*not in the local cache, and the Hub is offline"):
        scorer.check_model_files()
    missing = get_registry().create("scorer", "learned-fusion", {"model": "models/no-such-model"})
    with pytest.raises(ConfigError, match="no such file or folder"):  # a local path, not taken for a Hub id
        missing.check_model_files()
