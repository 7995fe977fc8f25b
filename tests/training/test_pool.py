"""The shipped training pool: disjoint from the evaluation file, fixed split, hashes as recorded."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

from ragsift.datasets import load_examples

ROOT = Path(__file__).resolve().parents[2]
POOL = ROOT / "data" / "training"
EVALUATION = ROOT / "ragsift" / "data" / "hotpotqa-dev-sf100.json"


def _script():
    spec = importlib.util.spec_from_file_location("build_training_pool", ROOT / "scripts" / "build_training_pool.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ids(name: str) -> list[str]:
    return [e.id for e in load_examples(POOL / name)]


def test_pool_never_touches_the_evaluation_file():
    evaluation = json.loads(EVALUATION.read_text(encoding="utf-8"))
    eval_ids = {r["_id"] for r in evaluation}
    eval_questions = {r["question"].strip().lower() for r in evaluation}
    for name in ("hotpotqa-train-pool.json", "hotpotqa-dev-pool.json", "hotpotqa-paragraph-pool.jsonl", "hotpotqa-dev-ircot52.jsonl"):
        examples = list(load_examples(POOL / name))
        assert examples, name
        assert not {e.id for e in examples} & eval_ids, name
        assert not {e.question.strip().lower() for e in examples} & eval_questions, name


def test_split_is_fixed_by_the_id_and_pools_are_deduplicated():
    build = _script()
    train, dev = _ids("hotpotqa-train-pool.json"), _ids("hotpotqa-dev-pool.json")
    paragraph = _ids("hotpotqa-paragraph-pool.jsonl")
    assert len(set(train)) == len(train) and len(set(dev)) == len(dev) and len(set(paragraph)) == len(paragraph)
    assert all(build.is_development(i) for i in dev)
    assert not any(build.is_development(i) for i in train)
    assert not (set(train) | set(dev)) & set(paragraph)
    assert 150 <= len(dev) <= 260
    # every dev question has sentence-level labels
    assert all(e.evidence for e in load_examples(POOL / "hotpotqa-dev-pool.json"))


def test_manifest_hashes_match_the_shipped_files():
    manifest = json.loads((POOL / "manifest.json").read_text())
    for name, info in manifest["outputs"].items():
        data = (POOL / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info["sha256"], name
    assert manifest["evaluation_file"]["sha256"] == hashlib.sha256(EVALUATION.read_bytes()).hexdigest()


def test_ircot52_matches_the_sentence_labelled_sample(data_dir):
    ircot = {e.id: e for e in load_examples(POOL / "hotpotqa-dev-ircot52.jsonl")}
    official = {e.id: e for e in load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json")}
    assert set(ircot) == set(official) and len(ircot) == 52
