"""Issue 9, cases 3 to 5: a run directory belongs to one run. Colliding prediction file names
are refused, a foreign or non-empty folder is never used, everything is validated before the
folder is created, and ``--resume`` refuses a changed ragsift version or model file unless
``--allow-mixed`` (real CLI, subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_process import ragsift

HOTPOT = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"
QUICK = """
[evaluation]
warmup = 0
metrics = ["evidence", "empty"]
"""


def _config(tmp_path: Path, compressors: str, evaluation: str = QUICK) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n{compressors}\n{evaluation}')
    return path


def _evaluate(config: Path, out: Path, *extra: str):
    return ragsift("evaluate", "-c", config, "--out", out, "--no-reader", "--limit", "2", "-q", *extra)


def _refused(proc, *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("ragsift: error: ") and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


@pytest.mark.parametrize("labels", [('"bm 25"', "bm_25"), ("BM25", "bm25")])
def test_labels_sharing_a_predictions_file_are_refused(tmp_path, labels):
    first, second = labels
    config = _config(tmp_path, f'[compressors.{first}]\nname = "bm25"\n[compressors.{second}]\nname = "bm25"\n'
                                '[compressors.{second}.selector]\nk = 2\n'.replace("{second}", second))
    out = tmp_path / "run"
    proc = _evaluate(config, out)
    _refused(proc, f"'{first.strip(chr(34))}' and '{second}'", "share one predictions file")
    assert not out.exists()


@pytest.mark.slow
def test_a_foreign_folder_is_never_used_as_a_run(tmp_path):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n')
    foreign = tmp_path / "foreign"
    (foreign / "predictions").mkdir(parents=True)
    stale = '{"id": "5a8b57f25542995d1e6f1371", "compressor": "none", "metrics": {"evidence_recall": 0.0}}\n'
    (foreign / "predictions" / "none.jsonl").write_text(stale)
    (foreign / "summary.md").write_text("someone else's notes\n")
    for extra in ([], ["--resume"]):
        _refused(_evaluate(config, foreign, *extra), "not empty", "no manifest.json")
    assert (foreign / "summary.md").read_text() == "someone else's notes\n"
    assert (foreign / "predictions" / "none.jsonl").read_text() == stale
    assert sorted(p.name for p in foreign.rglob("*")) == ["none.jsonl", "predictions", "summary.md"]
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _evaluate(config, empty)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((empty / "manifest.json").read_text())["status"] == "complete"


def test_out_that_is_a_file_is_refused(tmp_path):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n')
    out = tmp_path / "file"
    out.write_text("x")
    _refused(_evaluate(config, out), "is a file")
    assert out.read_text() == "x"


@pytest.mark.parametrize("evaluation, needle", [
    ('[evaluation]\nbaseline = "exit"\n', "baseline 'exit' is not a compressor label"),
    ('[evaluation]\nlimits = {bm26 = 1}\n', "bm26 not compressor label"),
    ('[evaluation]\nmetrics = ["no-such-metric"]\n', "no-such-metric"),
])
def test_everything_is_validated_before_the_run_directory_is_created(tmp_path, evaluation, needle):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n', evaluation)
    out = tmp_path / "run"
    _refused(_evaluate(config, out), needle)
    assert not out.exists()


@pytest.mark.parametrize("table, needle", [
    ('[compressors.b.selector]\nk = "x"\n', "'k': Input should be a valid integer"),
    ('bogus = 3\n', "unknown parameter 'bogus'"),
])
def test_plugin_params_are_validated_before_the_run_directory_is_created(tmp_path, table, needle):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n[compressors.b]\nname = "bm25"\n' + table)
    out = tmp_path / "run"
    _refused(_evaluate(config, out), "[compressors.b]", needle)
    assert not out.exists()


def test_reader_params_are_validated_before_the_run_directory_is_created(tmp_path):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n[reader]\nname = "openai"\ntimeout = -1\n')
    out = tmp_path / "run"
    proc = ragsift("evaluate", "-c", config, "--out", out, "--limit", "1", "-q")
    _refused(proc, "timeout")
    assert not out.exists()


def _tokenizer_folder(folder: Path, weights: float) -> Path:
    """A model folder the 'tokens' metric can use: a word tokenizer and one safetensors file."""
    import numpy as np
    from safetensors.numpy import save_file
    from tiny_causal_lm import word_tokenizer

    folder.mkdir(exist_ok=True)
    word_tokenizer(["the", "a"]).save_pretrained(folder)
    save_file({"w": np.full((2, 2), weights, dtype=np.float32)}, str(folder / "model.safetensors"))
    return folder


@pytest.mark.slow
def test_resume_refuses_a_changed_version_or_model_unless_allowed(tmp_path):
    model = _tokenizer_folder(tmp_path / "tok", 1.0)
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n',
                     f'[evaluation]\nwarmup = 0\nmetrics = [{{name = "tokens", tokenizer = "{model}"}}, "empty"]\n')
    out = tmp_path / "run"
    assert _evaluate(config, out).returncode == 0
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["ragsift_version"] = "0.0.1"  # as if the run had started before an upgrade
    manifest_path.write_text(json.dumps(manifest))
    _tokenizer_folder(model, 2.0)  # and the model file was replaced since
    proc = _evaluate(config, out, "--resume")
    _refused(proc, "ragsift 0.0.1 -> ", f"model '{model}': file model.safetensors changed (sha256 ", "--allow-mixed")
    assert json.loads(manifest_path.read_text())["ragsift_version"] == "0.0.1"  # untouched
    proc = _evaluate(config, out, "--resume", "--allow-mixed")
    assert proc.returncode == 0, proc.stderr
    resumed = json.loads(manifest_path.read_text())["resumed"][-1]
    assert any("ragsift 0.0.1" in c for c in resumed["mixed"]) and any("model.safetensors" in c for c in resumed["mixed"])


@pytest.mark.slow
def test_resume_refuses_a_changed_dataset_file(tmp_path):
    data = tmp_path / "data.json"
    data.write_bytes(HOTPOT.read_bytes())
    config = tmp_path / "run.toml"
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{data}"\n[compressors.none]\nname = "none"\n{QUICK}')
    out = tmp_path / "run"
    assert _evaluate(config, out).returncode == 0
    data.write_bytes(HOTPOT.read_bytes().replace(b"Lilu is what?", b"Lilu is who?", 1))
    for extra in ([], ["--allow-mixed"]):
        _refused(_evaluate(config, out, "--resume", *extra), "the input file changed", str(data))


def test_allow_mixed_needs_resume(tmp_path):
    config = _config(tmp_path, '[compressors.none]\nname = "none"\n')
    _refused(_evaluate(config, tmp_path / "run", "--allow-mixed"), "--allow-mixed only applies with --resume")


def test_version_changes_name_what_changed():
    from ragsift.evaluation.run.runner import version_changes

    old = {"ragsift_version": "0.1.0", "models": {"compressors": {"exit": [
        {"spec": "m", "sha256": {"a.safetensors": "1" * 64, "gone.safetensors": "2" * 64}}]}, "tokenizers": []}}
    new = {"ragsift_version": "0.1.0", "models": {"compressors": {"exit": [
        {"spec": "m", "sha256": {"a.safetensors": "3" * 64, "new.safetensors": "4" * 64}}]}, "tokenizers": []}}
    assert version_changes(old, new) == [
        "model 'm': file a.safetensors changed (sha256 111111111111... -> 333333333333...)",
        "model 'm': file gone.safetensors is gone",
        "model 'm': file new.safetensors is new",
    ]
    assert version_changes(old, old) == []
