"""LongLLMLingua's coarse ranking: the scorer's ranking (and values) equal a naive loop that runs
each unit + question alone through a tiny random-weight model; the compressor keeps whole
documents in rank order up to the rate; (integration) SmolLM2 on the bundled sample."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import build_plugin
from ragsift.scorers.question_likelihood import (
    LONGLLMLINGUA_MODEL,
    RESTRICTIVE_STATEMENT,
    QuestionLikelihoodScorer,
)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(OFFLINE_SMOLLM2)


@pytest.fixture(scope="module")
def model(tok):
    return tiny.build_tiny_lm("llama", len(tok), seed=5)


def _naive(model, tok, units: list[str], question: str) -> np.ndarray:
    """Per unit: <|endoftext|> + unit + "\\n\\n", then the question + restrictive statement; the mean
    log-probability of the question's tokens, one unbatched forward pass each, float64."""
    import torch

    q = tok.encode(question + RESTRICTIVE_STATEMENT, add_special_tokens=False)
    out = []
    for unit in units:
        ids = [0, *tok.encode(unit + "\n\n", add_special_tokens=False), *q]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].double()
        lp = torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()
        out.append(lp[-len(q):].mean())
    return np.array(out)


@pytest.mark.parametrize("layout", ["packed", "padded"])
def test_document_ranking_equals_a_naive_loop(tok, model, layout):
    example, sentences = tiny.example()
    scorer = QuestionLikelihoodScorer.from_model(model, tok, model="tiny", start_token="<|endoftext|>",
                                                 layout=layout, batch_size=2, row_tokens=64)
    got = scorer.score(example, sentences)
    units = [f"{d.title}\n{d.text}" for d in example.documents]
    naive = _naive(model, tok, units, example.question)
    np.testing.assert_allclose(got, naive[[s.doc_index for s in sentences]], atol=1e-5)
    per_doc = [got[[s.doc_index for s in sentences].index(d)] for d in range(3)]
    assert list(np.argsort(per_doc)) == list(np.argsort(naive))


def test_sentence_ranking_equals_a_naive_loop(tok, model):
    example, sentences = tiny.example()
    scorer = QuestionLikelihoodScorer.from_model(model, tok, model="tiny", start_token="<|endoftext|>",
                                                 granularity="sentence")
    got = scorer.score(example, sentences)
    naive = _naive(model, tok, [s.text for s in sentences], example.question)
    np.testing.assert_allclose(got, naive, atol=1e-5)
    assert list(np.argsort(-got, kind="stable")) == list(np.argsort(-naive, kind="stable"))
    assert (got < 0).all()


def test_a_long_unit_is_cut_from_its_end(tok, model):
    example, sentences = tiny.example()
    scorer = QuestionLikelihoodScorer.from_model(model, tok, model="tiny", start_token="<|endoftext|>", max_length=24)
    seqs, n_question = scorer.sequences(example, ["word " * 50])
    assert len(seqs[0]) == 24 and seqs[0][-n_question:] == tok.encode(example.question + RESTRICTIVE_STATEMENT)


def test_defaults_are_the_papers():
    assert RESTRICTIVE_STATEMENT == " We can get the answer to this question in the given documents."
    scorer = build_plugin("scorer", {"name": "question-likelihood"})
    assert scorer.config()["model"] == LONGLLMLINGUA_MODEL
    assert scorer.config()["granularity"] == "document" and scorer.config()["restrict"] == RESTRICTIVE_STATEMENT
    config = build_plugin("compressor", {"name": "longllmlingua"}).config()
    assert config["selector"] == {"name": "rate", "rate": 0.5, "granularity": "document", "tokenizer": "whitespace",
                                  "overflow": "keep-last"}
    assert config["assembler"]["document_order"] == "rank"


def test_compressor_keeps_whole_documents_in_rank_order(tok, model):
    example, sentences = tiny.example()
    compressor = build_plugin("compressor", {"name": "longllmlingua", "selector": {"rate": 0.3}})
    compressor.scorer = QuestionLikelihoodScorer.from_model(model, tok, model="tiny", start_token="<|endoftext|>")
    result = compressor.compress(example)
    doc_scores = {s.doc_index: result.scores[i] for i, s in enumerate(result.sentences)}
    best = max(doc_scores, key=doc_scores.get)
    kept_docs = [result.sentences[i].doc_index for i in result.kept]
    assert kept_docs[0] == best
    words = [len(s.text.split()) for s in result.sentences]
    budget = 0.3 * sum(words)
    ranked = sorted(doc_scores, key=lambda d: -doc_scores[d])
    used, expected = 0, []
    for d in ranked:  # whole documents until the one crossing the budget (kept)
        expected.append(d)
        used += sum(w for w, s in zip(words, result.sentences, strict=True) if s.doc_index == d)
        if used > budget:
            break
    assert sorted(set(kept_docs)) == sorted(expected)
    assert result.text.split("\n\n")[0] == example.documents[best].text


@pytest.mark.slow
@pytest.mark.integration
def test_smollm2_ranks_gold_documents_above_chance_on_training_questions():
    """Four questions of the HotpotQA *training* sample (not the evaluation file): the gold
    documents' mean rank among the 10 (0 = first) is better than chance (4.5)."""
    from ragsift.datasets import load_examples
    from ragsift.splitters.sentencizer import SentencizerSplitter

    examples = list(load_examples("tests/data/hotpotqa-train-sf100.json"))[:4]
    scorer = build_plugin("scorer", {"name": "question-likelihood", "model": OFFLINE_SMOLLM2,
                                     "start_token": "<|endoftext|>", "device": "cpu"})
    ranks = []
    for example in examples:
        sentences = SentencizerSplitter().split_all(example.documents)
        scores = scorer.score(example, sentences)
        assert all(np.isfinite(scores)) and max(scores) <= 0
        per_doc = {s.doc_index: scores[i] for i, s in enumerate(sentences)}
        assert all(scores[i] == per_doc[s.doc_index] for i, s in enumerate(sentences))
        order = sorted(per_doc, key=lambda d: -per_doc[d])
        ranks += [order.index(e.doc_index) for e in {e.doc_index: e for e in example.evidence or ()}.values()]
    assert len(ranks) >= 8 and np.mean(ranks) < 4.5, ranks
