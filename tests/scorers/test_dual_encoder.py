"""The dual-encoder scorer: tiny random BERT (pooling by hand) and the offline MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.models import OFFLINE_MINILM
from ragsift.registry import get_registry
from ragsift.scorers.dual_encoder import DualEncoderScorer, resolve_pooling
from ragsift.types import Document, Example, Sentence

WORDS = [
    "who",
    "wrote",
    "the",
    "book",
    "paris",
    "is",
    "capital",
    "of",
    "france",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "blue",
    "sky",
    "river",
]


def _build_tiny_bert(folder, seed: int = 0, hidden: int = 16) -> str:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    return _build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _example(question: str, texts: list[str]) -> tuple[Example, list[Sentence]]:
    doc = Document(title="T", text=" ".join(texts))
    sentences, offset = [], 0
    for i, t in enumerate(texts):
        sentences.append(Sentence(0, i, offset, offset + len(t), t))
        offset += len(t) + 1
    return Example(id="x", question=question, answers=(), documents=(doc,)), sentences


def _hand_embeddings(folder: str, texts: list[str], pooling: str) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    rows = []
    for text in texts:  # one at a time: no padding at all
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            states = model(**enc).last_hidden_state[0].numpy()
        rows.append(states.mean(axis=0) if pooling == "mean" else states[0])
    return np.stack(rows)


def test_registered_and_builds_without_weights():
    scorer = get_registry().create("scorer", "dual-encoder")
    assert isinstance(scorer, DualEncoderScorer)
    assert scorer.config()["model"] == OFFLINE_MINILM
    assert scorer._sentence_encoder is None  # nothing loaded by the constructor


@pytest.mark.parametrize(
    "bad", [{"pooling": "max"}, {"similarity": "l2"}, {"batch_size": 0}, {"max_length": 0}, {"colour": 1}]
)
def test_rejects_bad_params(bad):
    with pytest.raises(ConfigError, match="DualEncoderScorer"):
        DualEncoderScorer(**bad)


def test_empty_sentences_load_nothing():
    scorer = DualEncoderScorer(model="/nonexistent/model/folder")
    example, _ = _example("q", ["a"])
    assert scorer.score(example, []).shape == (0,)
    assert scorer._sentence_encoder is None


def test_auto_pooling_of_plain_folder_is_mean(tiny_bert):
    assert resolve_pooling(tiny_bert, "auto") == "mean"
    assert resolve_pooling(tiny_bert, "cls") == "cls"


@pytest.mark.parametrize("pooling", ["auto", "mean", "cls"])
def test_pooling_and_dot_match_hand_computation(tiny_bert, pooling):
    texts = ["paris is the capital of france", "a cat sat on the mat", "blue sky"]  # different lengths: padding
    question = "who wrote the book"
    example, sentences = _example(question, texts)
    scorer = DualEncoderScorer(model=tiny_bert, pooling=pooling, similarity="dot", batch_size=2, device="cpu")
    scores = scorer.score(example, sentences)
    hand_pool = "cls" if pooling == "cls" else "mean"
    q = _hand_embeddings(tiny_bert, [question], hand_pool)[0]
    s = _hand_embeddings(tiny_bert, texts, hand_pool)
    np.testing.assert_allclose(scores, s @ q, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scorer.embed_sentences(texts), s, rtol=1e-4, atol=1e-5)


def test_cosine_is_normalised_dot(tiny_bert):
    texts = ["paris is the capital of france", "river"]
    example, sentences = _example("capital of france", texts)
    dot = DualEncoderScorer(model=tiny_bert, similarity="dot", device="cpu").score(example, sentences)
    cos = DualEncoderScorer(model=tiny_bert, similarity="cosine", device="cpu").score(example, sentences)
    q = _hand_embeddings(tiny_bert, ["capital of france"], "mean")[0]
    s = _hand_embeddings(tiny_bert, texts, "mean")
    expected = (s @ q) / (np.linalg.norm(s, axis=1) * np.linalg.norm(q))
    np.testing.assert_allclose(cos, expected, rtol=1e-4, atol=1e-5)
    assert np.all(np.abs(cos) <= 1 + 1e-6)
    assert not np.allclose(dot, cos)


def test_separate_query_model(tiny_bert, tmp_path):
    other = _build_tiny_bert(tmp_path / "query-encoder", seed=7)
    texts = ["paris is the capital of france", "a cat sat on the mat"]
    example, sentences = _example("capital of france", texts)
    scorer = DualEncoderScorer(model=tiny_bert, query_model=other, device="cpu")
    scores = scorer.score(example, sentences)
    q = _hand_embeddings(other, ["capital of france"], "mean")[0]
    s = _hand_embeddings(tiny_bert, texts, "mean")
    np.testing.assert_allclose(scores, s @ q, rtol=1e-4, atol=1e-5)


def test_mismatched_dimensions_are_refused(tiny_bert, tmp_path):
    other = _build_tiny_bert(tmp_path / "wide", hidden=32)
    example, sentences = _example("q", ["paris"])
    with pytest.raises(ConfigError, match="same output size"):
        DualEncoderScorer(model=tiny_bert, query_model=other, device="cpu").score(example, sentences)


def test_prefixes_and_max_length_change_inputs(tiny_bert):
    texts = ["paris is the capital of france"]
    example, sentences = _example("capital", texts)
    base = DualEncoderScorer(model=tiny_bert, device="cpu").score(example, sentences)
    prefixed = DualEncoderScorer(model=tiny_bert, device="cpu", sentence_prefix="river ").score(example, sentences)
    cut = DualEncoderScorer(model=tiny_bert, device="cpu", max_length=4).score(example, sentences)
    assert not np.allclose(base, prefixed)
    assert not np.allclose(base, cut)


@pytest.mark.integration
@pytest.mark.slow
def test_minilm_ranks_the_answer_sentence_first():
    texts = [
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
        "Bananas are a good source of potassium.",
        "The stock market closed lower on Tuesday.",
    ]
    example, sentences = _example("When was the Eiffel Tower completed?", texts)
    for similarity in ("dot", "cosine"):
        scorer = DualEncoderScorer(similarity=similarity, device="cpu")
        scores = scorer.score(example, sentences)
        assert scorer.backends == {"query": "sentence-transformers", "sentence": "sentence-transformers"}
        assert scores[0] > scores[1] + 0.2 and scores[0] > scores[2] + 0.2
    # MiniLM's folder normalises its embeddings: dot == cosine
    np.testing.assert_allclose(
        DualEncoderScorer(similarity="dot", device="cpu").score(example, sentences),
        DualEncoderScorer(similarity="cosine", device="cpu").score(example, sentences), atol=1e-5,
    )
