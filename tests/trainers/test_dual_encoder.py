"""The dual-encoder trainer on tiny random-weight BERTs: InfoNCE loss goes down, the saved head
(frozen mode) or LoRA adapter (lora mode, on the top layer of a 2-layer BERT) loads into the
dual-encoder scorer and gives the trainer's scores, and an interrupted run resumes to the same
head or adapter."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from interrupted_training import Interrupted, InterruptedJob
from tiny_bert import save_tiny_bert, tiny_bert_and_data

from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.trainers.base import TrainingJob


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tiny_bert_and_data(tmp_path_factory.mktemp("bert"), train_limit=12, dev_limit=3, max_words=600)


@pytest.fixture(scope="module")
def two_layer_bert(data, tmp_path_factory):
    train, dev, _ = data
    texts = [e.question for e in train + dev] + [d.text for e in train + dev for d in e.documents]
    # larger initial weights than BERT's 0.02: the random encoder's sentence embeddings then differ
    # enough for a LoRA on its top layer to move the InfoNCE loss within a few dozen steps
    return save_tiny_bert(tmp_path_factory.mktemp("bert2"), texts, max_words=600, layers=2, initializer_range=0.2,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _trainer(base: str, steps: int, **extra):
    return get_registry().create("trainer", "dual-encoder", {
        "base_model": base, "steps": steps, "batch_size": 6, "negatives": 3, "learning_rate": 0.05,
        "max_length": 64, "device": "cpu", "encode_batch_size": 16, **extra})


def _labeler(**params):
    return get_registry().create("labeler", "gold-evidentiality", {"max_weak": 3, "max_distractors": 5, **params})


@pytest.mark.slow
def test_loss_goes_down_and_the_saved_head_scores_like_the_trainer(tmp_path, data):
    train, dev, base = data
    out = tmp_path / "de"
    result = _trainer(base, 60, batch_size=12).train(TrainingJob(train=train, dev=dev, output=out, progress=False,
                                                                 checkpoint_every=20, labeler=_labeler()))
    losses = [h["train_loss"] for h in result.history]
    assert len(losses) == 60 and np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.2
    assert all("dev_loss" in h for h in result.history)
    assert (out / "head" / "model.safetensors").is_file() and not list((out / "head").glob("*.bin"))
    assert result.scorer["head"] == str(out / "head") and result.scorer["name"] == "dual-encoder"
    counts = result.extra["label_counts"]
    assert counts["strong"] > 0 and counts["weak"] > 0 and counts["distractor"] > 0
    assert set(result.extra["zero_shot_dev"]["top_k"]) == set(range(1, 11))
    scorer = get_registry().create("scorer", "dual-encoder", {k: v for k, v in result.scorer.items() if k != "name"} | {"device": "cpu"})
    zero_shot = get_registry().create("scorer", "dual-encoder", {"model": base, "similarity": "cosine", "max_length": 64,
                                                                  "device": "cpu"})
    splitter = PresplitSplitter(fallback="sentencizer")
    assert result.dev is not None and len(result.dev.scores) == len(dev)
    moved = 0.0
    for example, expected in zip(dev, result.dev.scores, strict=True):
        sentences = splitter.split_all(example.documents)
        got = scorer.score(example, sentences)
        assert np.allclose(got, expected, atol=1e-5)
        moved = max(moved, float(np.abs(got - zero_shot.score(example, sentences)).max()))
    assert moved > 1e-3  # the head changed the scores


def test_a_fresh_head_is_the_identity_and_the_scorer_refuses_a_pickled_head(tmp_path, data):
    from ragsift.scorers.embedding_head import apply_head, load_head, new_head, save_head

    head = new_head(5)
    x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    assert np.allclose(apply_head(head, x), x)
    save_head(head, tmp_path / "h")
    assert np.allclose(apply_head(load_head(tmp_path / "h"), x), x)
    with pytest.raises(ConfigError, match="4-dim"):
        apply_head(load_head(tmp_path / "h"), x[:, :4])
    (tmp_path / "h" / "model.safetensors").rename(tmp_path / "h" / "pytorch_model.bin")
    with pytest.raises(ConfigError, match="model.safetensors"):
        load_head(tmp_path / "h")


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["embeddings", "dual-encoder"])
def test_an_interrupted_run_resumes_to_the_same_head(tmp_path, data, phase):
    from safetensors.torch import load_file

    train, dev, base = data
    _trainer(base, 12).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=4,
                                         labeler=_labeler()))
    with pytest.raises(Interrupted):
        _trainer(base, 12).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", checkpoint_every=4,
                                                stop_after=6, stop_bar=phase, labeler=_labeler()))
    if phase == "dual-encoder":
        assert json.loads((tmp_path / "cut.work" / "checkpoint" / "head" / "state.json").read_text())["step"] == 4
    else:
        assert (tmp_path / "cut.work" / "checkpoint" / "embeddings" / "state.json").is_file()
        assert not (tmp_path / "cut.work" / "checkpoint" / "head").exists()
    result = _trainer(base, 12).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                  checkpoint_every=4, resume=True, labeler=_labeler()))
    assert [h["step"] for h in result.history] == list(range(1, 13))
    fresh = load_file(str(tmp_path / "fresh" / "head" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "cut" / "head" / "model.safetensors"))
    assert fresh.keys() == resumed.keys()
    for key in fresh:
        assert np.allclose(fresh[key].numpy(), resumed[key].numpy(), atol=1e-6), key
    if phase == "dual-encoder":
        assert result.extra["texts_from_checkpoint"] == result.extra["texts"]
    else:  # only what was encoded before the interruption came from the checkpoint
        assert 0 < result.extra["texts_from_checkpoint"] < result.extra["texts"]
    # other data reuses the embeddings the checkpoint has; another encoder is refused
    import shutil

    shutil.copytree(tmp_path / "cut.work" / "checkpoint" / "embeddings", tmp_path / "more.work" / "checkpoint" / "embeddings")
    more = _trainer(base, 2).train(TrainingJob(train=train[3:], dev=dev[:1], output=tmp_path / "more", progress=False,
                                               checkpoint_every=4, resume=True, labeler=_labeler()))
    assert 0 < more.extra["texts_from_checkpoint"] < more.extra["texts"]
    with pytest.raises(ConfigError, match="another encoder"):
        _trainer(base, 2, max_length=32).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                           checkpoint_every=4, resume=True, labeler=_labeler()))


@pytest.mark.slow
def test_shipped_head_and_configs_load_and_score():
    from ragsift.config import load_config
    from ragsift.testing import presplit_sentences, sample_example

    root = Path(__file__).resolve().parents[2]
    card = json.loads((root / "models" / "ecorag-trained" / "card.json").read_text())
    assert card["trainer"]["name"] == "dual-encoder" and card["labeler"]["name"] == "gold-evidentiality"
    pipeline = load_config("ecorag-trained")
    pipeline.validate_all()
    (compressor,) = pipeline.build_compressors().values()
    assert compressor.scorer.params.adapter == "models/ecorag-trained/adapter" and compressor.scorer.params.head is None
    assert card["trainer"]["config"]["encoder"] == "lora" and card["scorer"]["adapter"] == "models/ecorag-trained/adapter"
    shipped = [f for f in (root / "models" / "ecorag-trained").rglob("*")
               if f.is_file() and not {"checkpoint", "cache"} & set(f.parts)]  # the git-ignored training byproducts
    assert sum(f.stat().st_size for f in shipped) < 2_000_000  # only the adapter: MiniLM itself is a package
    topk = load_config("ecorag-trained-topk").build_compressors()
    trained = next(c for label, c in topk.items() if label.startswith("ecorag-trained"))
    zero_shot = next(c for label, c in topk.items() if label.startswith("minilm"))
    assert trained.selector.params.k == zero_shot.selector.params.k  # equal sentences kept
    example = sample_example()
    sentences = presplit_sentences(example)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # loading the adapter prints no library deprecation noise
        scores = trained.scorer.score(example, sentences)
    plain = zero_shot.scorer.score(example, sentences)
    assert scores.shape == plain.shape == (len(sentences),) and np.all(np.abs(scores) <= 1 + 1e-6)
    assert not np.allclose(scores, plain, atol=1e-3)


def _lora_trainer(base: str, steps: int, **extra):
    return _trainer(base, steps, encoder="lora", **{"train_layers": 1, "lora_r": 8, "lora_alpha": 16, "learning_rate": 0.01, **extra})


@pytest.mark.slow
def test_lora_loss_goes_down_and_the_saved_adapter_scores_like_the_trainer(tmp_path, data, two_layer_bert):
    train, dev, _ = data
    base = two_layer_bert
    out = tmp_path / "lora"
    result = _lora_trainer(base, 40, batch_size=12, eval_every=10, eval_k=3).train(
        TrainingJob(train=train, dev=dev, output=out, progress=False, checkpoint_every=20, labeler=_labeler()))
    losses = [h["train_loss"] for h in result.history]
    assert len(losses) == 40 and np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.2
    evaluated = [h for h in result.history if "dev_loss" in h]
    assert [h["step"] for h in evaluated] == [10, 20, 30, 40] and all(0 <= h["dev_recall_at_3"] <= 1 for h in evaluated)
    assert sorted(p.name for p in (out / "adapter").iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert config["layers_to_transform"] == [1] and config["base_model_name_or_path"] == base
    assert result.extra["trained_layers"] == [1] and result.extra["adapter_parameters"] > 0
    assert result.scorer["adapter"] == str(out / "adapter") and "head" not in result.scorer
    scorer = get_registry().create("scorer", "dual-encoder", {k: v for k, v in result.scorer.items() if k != "name"} | {"device": "cpu"})
    zero_shot = get_registry().create("scorer", "dual-encoder", {"model": base, "similarity": "cosine", "max_length": 64,
                                                                  "device": "cpu"})
    splitter = PresplitSplitter(fallback="sentencizer")
    assert result.dev is not None and len(result.dev.scores) == len(dev)
    before = [zero_shot.score(e, splitter.split_all(e.documents)) for e in dev]
    moved = 0.0
    for example, expected, plain in zip(dev, result.dev.scores, before, strict=True):
        got = scorer.score(example, splitter.split_all(example.documents))
        assert np.allclose(got, expected, atol=1e-5)
        moved = max(moved, float(np.abs(got - plain).max()))
    assert moved > 1e-3  # the adapter changed the scores ...
    for example, plain in zip(dev, before, strict=True):  # ... of its own copy of the encoder only
        assert np.allclose(zero_shot.score(example, splitter.split_all(example.documents)), plain, atol=1e-6)
    # the zero-shot development scores the trainer reports are the untouched encoder's
    assert result.extra["zero_shot_dev"]["top_k"][1]["recall"] >= 0


@pytest.mark.slow
def test_an_interrupted_lora_run_resumes_to_the_same_adapter(tmp_path, data, two_layer_bert):
    from safetensors.torch import load_file

    train, _, _ = data
    base = two_layer_bert
    _lora_trainer(base, 8).train(TrainingJob(train=train, dev=[], output=tmp_path / "fresh", progress=False, checkpoint_every=4,
                                             labeler=_labeler()))
    with pytest.raises(Interrupted):
        _lora_trainer(base, 8).train(InterruptedJob(train=train, dev=[], output=tmp_path / "cut", checkpoint_every=4,
                                                    stop_bar="dual-encoder", stop_after=6, labeler=_labeler()))
    assert json.loads((tmp_path / "cut.work" / "checkpoint" / "adapter" / "state.json").read_text())["step"] == 4
    result = _lora_trainer(base, 8).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                      checkpoint_every=4, resume=True, labeler=_labeler()))
    assert [h["step"] for h in result.history] == list(range(1, 9))
    assert result.extra["texts_from_checkpoint"] == result.extra["texts"]  # the cached lower-layer states
    fresh = load_file(str(tmp_path / "fresh" / "adapter" / "adapter_model.safetensors"))
    resumed = load_file(str(tmp_path / "cut" / "adapter" / "adapter_model.safetensors"))
    assert fresh.keys() == resumed.keys() and any("lora_B" in k for k in fresh)
    for key in fresh:
        assert np.allclose(fresh[key].numpy(), resumed[key].numpy(), atol=1e-6), key
    with pytest.raises(ConfigError, match="another encoder"):
        _lora_trainer(base, 8, max_length=32).train(TrainingJob(train=train, dev=[], output=tmp_path / "cut", progress=False,
                                                                checkpoint_every=4, resume=True, labeler=_labeler()))


def test_the_scorer_refuses_a_pickled_adapter_and_the_trainer_more_layers_than_the_encoder_has(tmp_path, data, two_layer_bert):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "adapter_config.json").write_text("{}")
    (tmp_path / "a" / "adapter_model.bin").write_bytes(b"not read")
    scorer = get_registry().create("scorer", "dual-encoder", {"model": two_layer_bert, "adapter": str(tmp_path / "a"),
                                                               "device": "cpu"})
    with pytest.raises(ConfigError, match="adapter_model.safetensors"):
        scorer.warm_up()
    with pytest.raises(ConfigError, match="train_layers = 3 but the encoder has 2 layers"):
        _lora_trainer(two_layer_bert, 2, train_layers=3).train(TrainingJob(train=data[0], dev=[], output=tmp_path / "x",
                                                                           progress=False, labeler=_labeler()))
