"""The ``exit`` compressor: EXIT's composition, its configs, threshold >= and original-order
reassembly, and empty compressions; scored by tiny random-weight models loaded from a folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.compressors.exit import ExitCompressor
from ragsift.config import load_config
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import get_registry

CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(OFFLINE_SMOLLM2)


@pytest.fixture(scope="module")
def random_folder(tok, tmp_path_factory) -> str:
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("llama"), tiny.build_tiny_lm("llama", len(tok), seed=3), tok)


@pytest.fixture(scope="module")
def half_folder(tok, tmp_path_factory) -> str:
    """A model whose final norm is zero: every logit is exactly 0, so every score is exactly 0.5."""
    model = tiny.build_tiny_lm("llama", len(tok), seed=4)
    model.model.norm.weight.data.zero_()
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("half"), model, tok)


def _exit(folder: str, **stages) -> ExitCompressor:
    return ExitCompressor(scorer={"model": folder, "adapter": "", "device": "cpu"}, **stages)


def _original_order(example, sentences, kept) -> str:
    blocks = []
    for d in range(len(example.documents)):
        chosen = [s.text for i, s in enumerate(sentences) if i in kept and s.doc_index == d]
        if chosen:
            blocks.append(" ".join(chosen))
    return "\n\n".join(blocks)


def test_registered_with_the_papers_stages():
    compressor = get_registry().create("compressor", "exit", {})
    assert isinstance(compressor, ExitCompressor)
    config = compressor.config()
    assert config["splitter"]["name"] == "sentencizer"
    assert config["scorer"]["name"] == "causal-yes-no"
    assert (
        config["scorer"]["model"] == "google/gemma-2b-it" and config["scorer"]["adapter"] == "doubleyyh/exit-gemma-2b"
    )
    assert config["selector"] == {"name": "threshold", "threshold": 0.5}
    assert config["assembler"]["name"] == "original-order" and config["assembler"]["title"] is False
    assert compressor.scorer._model is None  # building loads nothing


def test_paper_config_and_offline_config_validate():
    paper = load_config(CONFIGS / "exit.toml")
    paper.validate_all()
    scorer = paper.build_compressors()["exit"].scorer.params
    assert (scorer.model, scorer.adapter) == ("google/gemma-2b-it", "doubleyyh/exit-gemma-2b")
    assert scorer.load_in_4bit and scorer.dtype == "fp16" and scorer.device == "cuda" and scorer.overflow == "error"
    offline = load_config(CONFIGS / "exit-offline.toml")
    offline.validate_all()
    scorer = offline.build_compressors()["exit"].scorer.params
    assert scorer.model == OFFLINE_SMOLLM2 and scorer.adapter is None and scorer.device == "cpu"


def test_offline_template_is_the_exit_instruction_in_smollm2_chat_format(tok):
    offline = load_config(CONFIGS / "exit-offline.toml").build_compressors()["exit"].scorer.params
    instruction = (
        "Query:\nQ\nFull context:\nC\nSentence:\nS\n"
        'Is this sentence useful in answering the query? Answer only "Yes" or "No".'
    )
    rendered = tok.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    assert offline.template.replace("{query}", "Q").replace("{context}", "C").replace("{sentence}", "S") == rendered


def test_a_score_of_exactly_one_half_is_kept(half_folder):
    example, _ = tiny.example()
    result = _exit(half_folder).compress(example)
    assert result.scores == [0.5] * len(result.sentences)
    assert result.kept and sorted(result.kept) == list(range(len(result.sentences)))
    assert result.text == _original_order(example, result.sentences, set(result.kept))
    assert not result.is_empty


def test_nothing_kept_is_a_valid_reported_outcome(half_folder):
    example, _ = tiny.example()
    result = _exit(half_folder, selector={"threshold": 0.6}).compress(example)
    assert result.kept == [] and result.text == "" and result.is_empty
    record = result.to_record()
    assert record["empty"] is True and record["compressed_text"] == ""
    assert len(record["sentences"]) == 8 and not any(s["kept"] for s in record["sentences"])


def test_kept_sentences_are_reassembled_in_original_order(random_folder):
    example, _ = tiny.example()
    scores = np.array(_exit(random_folder).compress(example).scores)
    tau = float(np.sort(scores)[len(scores) // 2])  # exactly one sentence's score
    result = _exit(random_folder, selector={"threshold": tau}).compress(example)
    expected = {i for i, s in enumerate(scores) if s >= tau}
    assert set(result.kept) == expected and 0 < len(expected) < len(scores)
    assert int(np.argsort(scores)[len(scores) // 2]) in result.kept  # score == threshold is kept
    assert result.text == _original_order(example, result.sentences, expected)
    positions = [result.text.index(result.sentences[i].text) for i in sorted(expected)]
    assert positions == sorted(positions)
