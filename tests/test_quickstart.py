"""The main job (scripts/quickstart.sh, configs/quickstart.toml), checked without running it."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from ragsift.config import load_config
from ragsift.datasets import resolve_data
from ragsift.evaluation.run import sweep as sw
from ragsift.evaluation.run.config_check import config_problems
from ragsift.evaluation.run.settings import EvaluationSettings

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "quickstart.toml"
SCRIPT = ROOT / "scripts" / "quickstart.sh"
COMPRESSORS = {  # label -> registered compressor: every compressor of the main job
    "none": "none", "oracle": "oracle", "bm25@k=2": "bm25", "bm25@k=3": "bm25", "bm25@k=5": "bm25",
    "random": "random", "embedding": "embedding", "fusion-trained": "bm25", "exit-trained": "exit",
    "ecorag-trained": "ecorag", "recomp-extractive": "recomp-extractive",
    "selective-context": "selective-context", "longllmlingua": "longllmlingua", "bridge-ranked": "cascade",
}


def test_the_quickstart_config_validates_and_builds_every_compressor():
    config = load_config(CONFIG)
    assert config_problems(config) == []  # what 'ragsift config validate' checks, model files included
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    built, families = sw.expand_sweeps(config.compressor_specs(), config.build_compressors(), settings.sweep,
                                       config.source)
    assert {label: c.registered_name for label, c in built.items()} == COMPRESSORS
    assert set(families.values()) == {"bm25"}
    # one reader for every compressor and every question: no reader_limit, no per-compressor limits
    assert settings.reader_limit is None and settings.limits == {} and settings.baseline == "none"
    reader = config.build_reader()
    assert reader is not None and reader.registered_name == "llama-cpp"
    assert reader.config() == load_config(ROOT / "configs" / "reader-qwen1.5b.toml").build_reader().config()
    assert reader.config()["model"] == "split:qwen2.5-coder-1.5b-instruct"
    # the reader and the EXIT, ECoRAG, RECOMP and fusion compressors come from their own configs
    # (include; exit-trained's in turn from exit-offline.toml)
    assert {p.name for p in config.included_files} == {
        "reader-qwen1.5b.toml", "fusion-trained.toml", "ecorag-trained.toml", "exit-trained.toml", "exit-offline.toml",
        "recomp-extractive-offline.toml", "selective-context-offline.toml", "longllmlingua-offline.toml", "bridge-order.toml"}
    for label, name in (("ecorag-trained", "ecorag-trained"), ("recomp-extractive", "recomp-extractive-offline"),
                        ("selective-context", "selective-context-offline"), ("longllmlingua", "longllmlingua-offline")):
        (own,) = load_config(ROOT / "configs" / f"{name}.toml").build_compressors().values()
        assert built[label].config() == own.config()
    assert built["exit-trained"].config() == \
        load_config(ROOT / "configs" / "exit-trained.toml").build_compressors()["exit-trained"].config()
    assert built["bridge-ranked"].config() == \
        load_config(ROOT / "configs" / "tuned" / "bridge-order.toml").build_compressors()["bridge-ranked"].config()
    assert settings.primary == "bridge-ranked"
    assert built["fusion-trained"].config() == \
        load_config(ROOT / "configs" / "fusion-trained.toml").build_compressors()["fusion-trained"].config()


def _dry_run(tmp_path: Path, *args: str) -> list[str]:
    """The evaluate command the script would run, from a copy of the script alone: a script that
    tried to set up (scripts/setup.sh is absent there) or to evaluate would fail."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy(SCRIPT, tmp_path / "scripts" / "quickstart.sh")
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "quickstart.sh"), *args], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [shlex.split(line) for line in proc.stdout.splitlines()]


def _option(argv: list[str], name: str) -> str:
    return argv[len(argv) - 1 - argv[::-1].index(name) + 1]  # the last one wins, as in argparse


def test_full_runs_all_100_questions_in_its_own_run_directory(tmp_path):
    steps = _dry_run(tmp_path, "--full", "--dry-run")
    # in steps of 10 questions, each continuing the last (--resume): stopped early, every
    # compressor has the same first questions
    assert [int(_option(step, "--limit")) for step in steps] == list(range(10, 101, 10))
    for full in steps:
        assert full[:5] == [".venv/bin/ragsift", "evaluate", "--config", "configs/quickstart.toml", "--out"]
        assert _option(full, "--out") == "runs/quickstart-full" and "--resume" in full
    assert len(list(resolve_data(None, None, None).load(None))) == 100  # 100 = every question of the bundled file


def test_the_quickstart_runs_the_first_n_questions_and_passes_extra_arguments_through(tmp_path):
    (quick,) = _dry_run(tmp_path, "--dry-run")
    assert _option(quick, "--out") == "runs/quickstart" and "--resume" in quick
    assert 1 <= int(_option(quick, "--limit")) < 100
    (extra,) = _dry_run(tmp_path, "--dry-run", "-q", "--out", "runs/my run")
    assert extra[-3:] == ["-q", "--out", "runs/my run"] and _option(extra, "--out") == "runs/my run"
