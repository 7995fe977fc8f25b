"""The ECoRAG evaluator's readout trainer (``judge-readout``) on a tiny random-weight Llama: the
training sets are the reflection's candidate sets, the fit's loss goes down, the saved readout loads
into the ``causal`` judge and gives the trainer's probabilities, and an interrupted run resumes to
the same readout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_causal_lm as tiny
from interrupted_training import Interrupted, InterruptedJob

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.lm.readout import load_readout
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import get_registry
from ragsift.trainers.base import TrainingJob
from ragsift.trainers.judge_readout import evidence_sets

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tok = load_tokenizer(OFFLINE_SMOLLM2)
    return tiny.save_tiny_lm(tmp_path_factory.mktemp("tiny") / "llama", tiny.build_tiny_lm("llama", len(tok), seed=5), tok)


def _trainer(base: str):
    return get_registry().create("trainer", "judge-readout", {
        "judge": {"name": "causal", "model": base, "device": "cpu", "max_length": 4096},
        "step": 4, "max_sentences": 12, "batch_size": 4, "steps": 40, "l2": 1e-3})


def test_candidate_sets_are_the_reflections_and_labelled_by_the_supporting_facts():
    example = next(iter(load_examples(DATA / "hotpotqa-dev-ircot52-sf.json", limit=1)))
    ranker = get_registry().create("scorer", "bm25", {})
    sets, labels = evidence_sets(example, ranker, 4, 20, "{title}: {sentence}")
    assert [len(s) for s in sets[:-1]] == [4, 8, 12, 16, 20]
    assert all(a == b[: len(a)] for a, b in zip(sets[:-2], sets[1:-1], strict=True))  # nested, rank order
    assert labels[-1] is True and len(sets[-1]) == len(example.evidence or ())
    gold = set(sets[-1])
    assert labels[:-1] == [gold <= set(s) for s in sets[:-1]]


def test_a_blank_readout_is_the_zero_shot_judge():
    """``readout = ""`` switches off a readout an included config set (configs/dev/ecorag-judge.toml)."""
    for blank in ("", "  "):
        assert get_registry().create("judge", "causal", {"readout": blank}).params.readout is None
    assert get_registry().create("judge", "causal", {"readout": "r.safetensors"}).params.readout == "r.safetensors"


def test_a_judge_on_the_llama_cpp_backend_is_refused_before_any_model_loads():
    trainer = get_registry().create("trainer", "judge-readout", {
        "judge": {"name": "causal", "backend": "llama-cpp", "model": "split:qwen2.5-coder-0.5b-instruct"}})
    with pytest.raises(ConfigError, match="backend is 'llama-cpp'"):
        trainer._judge()


@pytest.mark.slow
def test_training_fits_and_the_judge_loads_the_readout(base, tmp_path):
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=4))
    dev = list(load_examples(DATA / "hotpotqa-dev-ircot52-sf.json", limit=2))
    result = _trainer(base).train(TrainingJob(train=train, dev=dev, output=tmp_path / "jr", progress=False, checkpoint_every=2))
    losses = [h["train_loss"] for h in result.history]
    assert losses[-1] < 0.5 * losses[0]
    assert result.scorer["readout"] == str(tmp_path / "jr" / "readout.safetensors") and result.scorer["name"] == "causal"
    judge = get_registry().create("judge", "causal", {k: v for k, v in result.scorer.items() if k != "name"})
    zero_shot = get_registry().create("judge", "causal", {"model": base, "device": "cpu"})
    ranker = get_registry().create("scorer", "bm25", {})
    assert result.dev is not None and len(result.dev.scores) == 2
    for example, expected in zip(dev, result.dev.scores, strict=True):
        sets, _ = evidence_sets(example, ranker, 4, 12, "{title}: {sentence}")
        got = judge.probabilities(example.question, sets)
        assert np.allclose(got, expected, atol=1e-5)
        assert not np.allclose(got, zero_shot.probabilities(example.question, sets), atol=1e-3)


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_readout(base, tmp_path):
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=3))
    _trainer(base).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=2))
    with pytest.raises(Interrupted):
        _trainer(base).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", stop_bar="features", checkpoint_every=2,
                                            stop_after=3))
    assert (tmp_path / "cut.work" / "checkpoint" / "features.safetensors").is_file()
    _trainer(base).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False, checkpoint_every=2, resume=True))
    fresh = load_readout(str(tmp_path / "fresh" / "readout.safetensors"))
    resumed = load_readout(str(tmp_path / "cut" / "readout.safetensors"))
    assert np.allclose(fresh[0].numpy(), resumed[0].numpy(), atol=1e-6) and abs(fresh[1] - resumed[1]) < 1e-6
