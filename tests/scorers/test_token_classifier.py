"""LLMLingua-2's token classifier on a tiny random-weight XLM-RoBERTa token classifier built here:
each word's score is the mean P(preserve) of its tokens, computed by hand; the compressor keeps,
per document, the words above the percentile, as character spans in original order."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import ConfigError
from ragsift.registry import build_plugin
from ragsift.scorers.token_classifier import LLMLINGUA2_MODEL, TokenClassifierScorer


@pytest.fixture(scope="module")
def tok():
    """Character tokens: every word is several tokens (a sub-word tokenizer's situation)."""
    from tokenizers import processors

    t = tiny.char_tokenizer()
    t.add_special_tokens({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"})
    t._tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", t.bos_token_id), ("</s>", t.eos_token_id)])
    return t


@pytest.fixture(scope="module")
def model(tok):
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForTokenClassification

    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, max_position_embeddings=600, num_labels=2,
                              pad_token_id=tok.pad_token_id, initializer_range=0.5)
    return XLMRobertaForTokenClassification(config).eval()


def _words(example):
    return build_plugin("splitter", {"name": "regex", "pattern": r"\s+"}).split_all(example.documents)


def _hand(model, tok, example, words) -> np.ndarray:
    """Per document: <s> + the characters of its words + </s>, one forward pass; a word's score
    is the mean P(class 1) over its characters."""
    import torch

    out = []
    for d in range(len(example.documents)):
        mine = [w for w in words if w.doc_index == d]
        ids = [tok.bos_token_id] + [tok.convert_tokens_to_ids(c) for w in mine for c in w.text] + [tok.eos_token_id]
        with torch.no_grad():
            probs = torch.softmax(model(torch.tensor([ids])).logits[0].double(), -1)[:, 1].numpy()
        at = 1
        for w in mine:
            out.append(1.0 if "?" in w.text else probs[at : at + len(w.text)].mean())
            at += len(w.text)
    return np.array(out)


def test_word_scores_are_mean_token_probabilities(tok, model):
    example, _ = tiny.example()
    words = _words(example)
    scorer = TokenClassifierScorer.from_model(model, tok, model="tiny", batch_size=2)
    np.testing.assert_allclose(scorer.score(example, words), _hand(model, tok, example, words), atol=1e-6)


def test_chunks_end_at_word_boundaries(tok, model):
    example, _ = tiny.example()
    words = [w for w in _words(example) if w.doc_index == 0]
    scorer = TokenClassifierScorer.from_model(model, tok, model="tiny", max_length=20)
    chunks = scorer.chunks(example, words)
    assert len(chunks) > 1
    for ids, owner in chunks:
        assert len(ids) <= 20 and owner[0] == owner[-1] == -1
        inner = [w for w in owner if w >= 0]
        assert all(inner.count(w) == len(words[w].text) for w in set(inner))  # whole words only
    assert sorted({w for _, owner in chunks for w in owner if w >= 0}) == list(range(len(words)))
    # every chunk alone, by hand: the chunked scores equal them
    import torch

    expected = np.zeros(len(words))
    for ids, owner in chunks:
        with torch.no_grad():
            probs = torch.softmax(model(torch.tensor([ids])).logits[0].double(), -1)[:, 1].numpy()
        for w in set(owner) - {-1}:
            expected[w] = probs[[k for k, o in enumerate(owner) if o == w]].mean()
    np.testing.assert_allclose(scorer.score(example, words), expected, atol=1e-6)


def test_compressor_keeps_the_words_above_each_documents_percentile(tok, model):
    example, _ = tiny.example()
    compressor = build_plugin("compressor", {"name": "llmlingua2"})
    compressor.scorer = TokenClassifierScorer.from_model(model, tok, model="tiny")
    result = compressor.compress(example)
    scores = np.array(result.scores)
    kept = set(result.kept)
    for d, doc in enumerate(example.documents):
        mine = [i for i, w in enumerate(result.sentences) if w.doc_index == d]
        threshold = np.percentile(scores[mine], 51)
        assert {i for i in mine if scores[i] > threshold} == kept & set(mine)
        for i in mine:  # words are exact character spans of their document
            w = result.sentences[i]
            assert doc.text[w.start : w.end] == w.text and " " not in w.text
    blocks = result.text.split("\n\n")
    first = [result.sentences[i].text for i in sorted(kept) if result.sentences[i].doc_index == 0]
    assert blocks[0] == " ".join(first)


def test_defaults_and_offline_error(monkeypatch):
    config = build_plugin("compressor", {"name": "llmlingua2"}).config()
    assert config["scorer"]["model"] == LLMLINGUA2_MODEL == "microsoft/llmlingua-2-xlm-roberta-large-meetingbank"
    assert config["scorer"]["force"] == ["\n", "?"]
    assert config["selector"] == {"name": "percentile", "ratio": 0.51, "comparison": ">", "per_document": True}
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    example, _ = tiny.example()
    with pytest.raises(ConfigError, match="microsoft/llmlingua-2-xlm-roberta-large-meetingbank"):
        TokenClassifierScorer().score(example, _words(example))
