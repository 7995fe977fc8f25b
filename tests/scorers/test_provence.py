"""Provence on a tiny random-weight DeBERTa-v2 built here: the native model (transformers classes,
no remote code) loads a saved checkpoint by name, refuses one without the heads, prints the
licence for the published model; sentence scores are the mean keep probability of their tokens,
computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import ConfigError
from ragsift.registry import build_plugin
from ragsift.scorers.provence import PROVENCE_MODEL, ProvenceScorer, load_provence, provence_model_class

WORDS = " ".join(d.text for d in tiny.DOCUMENTS).split() + tiny.QUESTION.split() + [d.title for d in tiny.DOCUMENTS]


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
    words = sorted({w for text in WORDS for w in text.split()})
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(specials + words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
                                   unk_token="[UNK]")


@pytest.fixture(scope="module")
def tok():
    return _tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    import torch
    from transformers import DebertaV2Config

    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=128, pooler_hidden_size=32,
                             relative_attention=True, position_buckets=16, pos_att_type=["p2c", "c2p"],
                             initializer_range=0.5, pad_token_id=0)
    return provence_model_class()(config).eval()


def _hand(model, tok, example, sentences) -> np.ndarray:
    """[CLS] question [SEP] title words [SEP] per document; mean sigmoid over each sentence's words."""
    import torch

    ids_of = tok.convert_tokens_to_ids
    out = []
    for d, doc in enumerate(example.documents):
        mine = [s for s in sentences if s.doc_index == d]
        head = [tok.cls_token_id, *ids_of(example.question.split()), tok.sep_token_id, *ids_of(doc.title.split())]
        body = [t for s in mine for t in ids_of(s.text.split())]
        with torch.no_grad():
            _, logits = model(torch.tensor([[*head, *body, tok.sep_token_id]]))
        probs = torch.sigmoid(logits[0].double()).numpy()
        at = len(head)
        for s in mine:
            n = len(s.text.split())
            out.append(probs[at : at + n].mean())
            at += n
    return np.array(out)


def test_sentence_scores_are_mean_keep_probabilities(tok, model):
    example, sentences = tiny.example()
    scorer = ProvenceScorer.from_model(model, tok, model="tiny", batch_size=2)
    np.testing.assert_allclose(scorer.score(example, sentences), _hand(model, tok, example, sentences), atol=1e-6)


def test_long_documents_are_read_in_windows_with_the_question(tok, model):
    example, sentences = tiny.example()
    scorer = ProvenceScorer.from_model(model, tok, model="tiny", max_length=20)
    inputs = scorer.inputs(example, sentences)
    assert len(inputs) > 3
    for ids, owner in inputs:
        assert len(ids) <= 20 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
        assert ids.count(tok.sep_token_id) == 2 and len(owner) == len(ids)
    assert sorted({w for _, owner in inputs for w in owner if w >= 0}) == list(range(len(sentences)))


def test_native_model_loads_a_saved_checkpoint_and_refuses_one_without_heads(tok, model, tmp_path, capsys):
    import torch
    from transformers import DebertaV2Model

    folder = tmp_path / "provence-tiny"
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    loaded, loaded_tok = load_provence(str(folder), "cpu", "fp32")
    ids = torch.tensor([[1, 5, 6, 2, 7, 8, 2]])
    with torch.no_grad():
        for a, b in zip(loaded(ids), model(ids), strict=True):
            torch.testing.assert_close(a, b)
    assert "CC BY-NC" not in capsys.readouterr().err  # not the published model: no licence note
    bare = tmp_path / "deberta-only"
    DebertaV2Model(model.config).save_pretrained(bare, safe_serialization=True)
    tok.save_pretrained(bare)
    with pytest.raises(ConfigError, match="lacks Provence weights"):
        load_provence(str(bare), "cpu", "fp32")
    names = set(model.state_dict())
    assert {"classifier.weight", "token_classifier.weight", "pooler.dense.weight"} <= names


def test_published_model_offline_prints_the_licence_and_names_the_model(monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    example, sentences = tiny.example()
    with pytest.raises(ConfigError, match="naver/provence-reranker-debertav3-v1"):
        ProvenceScorer().score(example, sentences)
    assert "CC BY-NC 4.0 (non-commercial use only)" in capsys.readouterr().err
    config = build_plugin("compressor", {"name": "provence"}).config()
    assert config["scorer"]["model"] == PROVENCE_MODEL
    assert config["selector"] == {"name": "threshold", "threshold": 0.1}
    assert config["assembler"]["title"] is True


def test_compressor_keeps_sentences_at_or_above_the_threshold(tok, model):
    example, _ = tiny.example()
    compressor = build_plugin("compressor", {"name": "provence"})
    compressor.scorer = ProvenceScorer.from_model(model, tok, model="tiny")
    result = compressor.compress(example)
    scores = np.array(result.scores)
    assert sorted(result.kept) == [i for i in range(len(scores)) if scores[i] >= 0.1]
    for block in result.text.split("\n\n"):
        assert block.split("\n")[0] in {d.title for d in example.documents}
