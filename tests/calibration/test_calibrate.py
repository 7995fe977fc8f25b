"""``ragsift calibrate`` end to end with BM25 on a few development questions: the frozen threshold is
the hand-computed conformal quantile, the frozen config validates and compresses with it; and the
evaluation files are refused before anything is scored or written."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ragsift.calibration.calibrate import CalibrateOptions, run_calibrate
from ragsift.calibration.conformal import conformal_rank
from ragsift.calibration.coverage import conformal_coverage
from ragsift.cli import main
from ragsift.config import load_config
from ragsift.datasets import bundled_sample_path, load_examples
from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.registry import build_plugin

TESTS = Path(__file__).parents[1]
DEV = TESTS / "data" / "hotpotqa-train-sf100.json"  # development data (not an evaluation file)
N = 24


def write_config(folder: Path, selector: str = '{ name = "top-k", k = 5 }', extra: str = "") -> Path:
    path = folder / "bm25.toml"
    path.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{DEV}"

[compressors.bm25]
name = "pipeline"
splitter = {{ name = "presplit", fallback = "regex" }}
scorer = "bm25"
selector = {selector}
assembler = "original-order"
{extra}
""", encoding="utf-8")
    return path


def test_calibrate_freezes_the_conformal_quantile_and_the_config_validates_and_compresses(tmp_path, capsys):
    config = write_config(tmp_path)
    frozen = tmp_path / "frozen.toml"
    assert main(["calibrate", "-c", str(config), "--alpha", "0.2", "--target", "sentences", "--limit", str(N),
                 "--out", str(frozen), "-q"]) == 0
    table = tomllib.loads(frozen.read_text(encoding="utf-8"))
    record = table["calibrated"]
    selector = table["compressors"]["bm25-conformal"]["selector"]

    # the threshold by hand: each question's lowest gold-sentence BM25 score; the k-th smallest
    examples = list(load_examples(DEV, limit=N))
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "regex"})
    scorer = build_plugin("scorer", "bm25")
    per_question = []
    for ex in examples:
        sentences = splitter.split_all(ex.documents)
        scores = scorer.score(ex, sentences)
        gold = [s for s, g in zip(scores, evidence_mask(sentences, ex.evidence), strict=True) if g]
        per_question.append(min(gold, default=math.inf))
    k = conformal_rank(N, 0.2)
    assert k == 5  # floor(25 * 0.2)
    assert selector["threshold"] == sorted(per_question)[k - 1] == record["threshold"]
    assert (record["n"], record["k"], record["alpha"], record["target"], record["level"]) == (N, k, 0.2, "sentences",
                                                                                               "sentence")
    assert selector["calibrated"]["sha256"] == record["data"]["sha256"] and len(record["data"]["ids"]) == N
    assert selector["calibrated"]["scorer"] == "bm25" and record["ragsift_version"]
    assert record["on_calibration"]["covered"] == sum(s >= selector["threshold"] for s in per_question) >= N - k + 1

    assert main(["config", "validate", str(frozen)]) == 0
    assert "OK (bm25-conformal)" in capsys.readouterr().out
    label, compressor = load_config(frozen).only_compressor("test")
    results = [compressor.compress(ex) for ex in examples]
    for ex, result in zip(examples, results, strict=True):
        scores = scorer.score(ex, result.sentences)
        assert sorted(result.kept) == [i for i, s in enumerate(scores) if s >= selector["threshold"]]
    # the coverage check of those compressions: the calibration questions' own coverage
    records = [r.to_record() for r in results]
    check = conformal_coverage(examples, records, selector, evaluated_on="hotpotqa")
    assert check is not None and check.covered == record["on_calibration"]["covered"] and check.note is None


def test_document_level_follows_top_documents(tmp_path):
    config = write_config(tmp_path, '{ name = "top-documents", aggregate = "max", k = 3 }')
    frozen = tmp_path / "docs.toml"
    record = run_calibrate(CalibrateOptions(config=str(config), alpha=0.25, target="documents", out=frozen, limit=12,
                                            progress=False, echo=lambda _: None))
    selector = tomllib.loads(frozen.read_text())["compressors"]["bm25-conformal"]["selector"]
    assert (record["level"], selector["level"], selector["aggregate"]) == ("document", "document", "max")
    assert record["k"] == 3 and np.isfinite(selector["threshold"])


def test_too_few_questions_keep_everything_and_say_so(tmp_path):
    config = write_config(tmp_path)
    messages: list[str] = []
    record = run_calibrate(CalibrateOptions(config=str(config), alpha=0.1, target="sentences", out=tmp_path / "f.toml",
                                            limit=5, progress=False, echo=messages.append))
    assert record["threshold"] == -math.inf and record["keeps_everything"]
    assert "too few questions" in messages[0]
    assert load_config(tmp_path / "f.toml").only_compressor("t")[1].compress(
        next(load_examples(DEV))).kept  # keeps everything


@pytest.mark.parametrize("data", [str(bundled_sample_path()), "hotpotqa-sf100", "2wiki-eval", "musique-eval"])
def test_calibrating_on_an_evaluation_file_is_refused(tmp_path, data):
    config = write_config(tmp_path)
    frozen = tmp_path / "frozen.toml"
    with pytest.raises(ConfigError, match="evaluation"):
        run_calibrate(CalibrateOptions(config=str(config), alpha=0.1, target="documents", level="document",
                                       out=frozen, data=data, limit=20, progress=False))
    assert not frozen.exists()


def test_a_copy_of_the_evaluation_file_under_another_name_is_refused(tmp_path, capsys):
    copy = tmp_path / "my-dev.json"
    copy.write_bytes(bundled_sample_path().read_bytes())
    assert main(["calibrate", "-c", str(write_config(tmp_path)), "-a", "0.1", "-t", "sentences", "-d", str(copy),
                 "-o", str(tmp_path / "f.toml"), "-q"]) == 2
    assert "evaluation file" in capsys.readouterr().err and not (tmp_path / "f.toml").exists()


def test_settings_without_a_guarantee_are_refused(tmp_path):
    config = write_config(tmp_path)
    with pytest.raises(ConfigError, match="needs level 'document'"):
        run_calibrate(CalibrateOptions(config=str(config), alpha=0.1, target="documents", out=tmp_path / "f.toml",
                                       limit=5, progress=False))
    cascade = tmp_path / "cascade.toml"
    cascade.write_text(f"""
[compressor]
name = "cascade"
scorer = "bm25"
selector = {{ name = "top-documents", k = 3 }}
fine_selector = {{ name = "top-k", k = 2 }}
[dataset]
path = "{DEV}"
""", encoding="utf-8")
    with pytest.raises(ConfigError, match="fine_selector"):
        run_calibrate(CalibrateOptions(config=str(cascade), alpha=0.1, target="documents", out=tmp_path / "f.toml",
                                       limit=5, progress=False))
    frozen = tmp_path / "exists.toml"
    frozen.write_text("")
    with pytest.raises(ConfigError, match="--force"):
        run_calibrate(CalibrateOptions(config=str(config), alpha=0.1, target="sentences", out=frozen, limit=5,
                                       progress=False))
