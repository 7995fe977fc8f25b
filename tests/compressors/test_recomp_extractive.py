"""RECOMP's extractive compressor as BERGEN runs it: title before each sentence for the encoder,
top k per document, every document under its title; offline on MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.models import OFFLINE_MINILM
from ragsift.registry import build_plugin
from ragsift.testing import sample_example

OFFLINE = {"model": OFFLINE_MINILM, "device": "cpu", "max_length": 256}


def test_defaults_are_bergens_with_the_published_checkpoint():
    config = build_plugin("compressor", {"name": "recomp-extractive"}).config()
    assert config["splitter"]["name"] == "nltk-punkt"
    scorer = config["scorer"]
    assert (scorer["model"], scorer["pooling"], scorer["similarity"], scorer["sentence_title"]) == (
        "fangyuan/hotpotqa_extractive_compressor", "mean", "dot", True)
    assert config["selector"] == {"name": "top-k", "k": 3, "per_document": True}
    assert config["assembler"]["title"] is True


def test_the_published_checkpoint_offline_names_the_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    compressor = build_plugin("compressor", {"name": "recomp-extractive"})
    with pytest.raises(ConfigError, match="fangyuan/hotpotqa_extractive_compressor"):
        compressor.compress(sample_example())


def test_scores_are_mean_pooled_dot_products_of_title_and_sentence():
    from ragsift.scorers.dual_encoder import mean_pool

    example = sample_example()
    compressor = build_plugin("compressor", {"name": "recomp-extractive", "scorer": OFFLINE})
    sentences = compressor.splitter.split_all(example.documents)
    scores = compressor.scorer.score(example, sentences)
    import torch
    from transformers import AutoModel, AutoTokenizer

    from ragsift.models import resolve_model

    path = resolve_model(OFFLINE_MINILM).path
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def embed(texts):
        batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            return mean_pool(model(**batch).last_hidden_state, batch["attention_mask"]).numpy()

    query = embed([example.question])[0]
    texts = [f"{example.documents[s.doc_index].title} {s.text}" for s in sentences]
    np.testing.assert_allclose(scores, embed(texts) @ query, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_per_document_under_every_title(k):
    example = sample_example()
    compressor = build_plugin("compressor", {"name": "recomp-extractive", "scorer": OFFLINE, "selector": {"k": k}})
    result = compressor.compress(example)
    per_doc = {d: sum(result.sentences[i].doc_index == d for i in result.kept) for d in range(3)}
    sizes = {d: sum(s.doc_index == d for s in result.sentences) for d in range(3)}
    assert per_doc == {d: min(k, sizes[d]) for d in range(3)}
    blocks = result.text.split("\n\n")
    assert [b.split("\n")[0] for b in blocks] == [d.title for d in example.documents]
    for d, block in enumerate(blocks):  # each document's best k by score, in original order
        mine = [i for i, s in enumerate(result.sentences) if s.doc_index == d]
        best = sorted(sorted(mine, key=lambda i: -result.scores[i])[:k])
        assert block.split("\n", 1)[1] == " ".join(result.sentences[i].text for i in best)
