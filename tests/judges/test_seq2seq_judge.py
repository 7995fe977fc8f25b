"""The seq2seq (ECoRAG, T5-family) evaluator on tiny random-weight T5 models."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.judges.seq2seq import PAPER_EVALUATOR_MODEL, Seq2SeqJudge
from ragsift.registry import get_registry

QUESTION = "who wrote hamlet ?"
SETS = [
    ["shakespeare wrote hamlet"],
    ["a cat sat on the mat", "paris is the capital of france", "who wrote the book ?"],
    [],
]


def _hand_probability(evaluator: Seq2SeqJudge, text: str) -> float:
    """Unpadded, one input at a time: softmax over the two label logits at decoder step 1."""
    import torch

    model, tok = evaluator._model, evaluator._tokenizer
    ids = torch.tensor([tok.encode(text)])
    with torch.no_grad():
        logits = model(input_ids=ids, decoder_input_ids=torch.tensor([[model.config.decoder_start_token_id]])).logits[
            0, 0
        ]
    evi, not_evi = evaluator.label_ids
    pair = torch.softmax(logits[[evi, not_evi]], dim=0)
    return float(pair[0])


def test_registered_defaults_to_the_paper_model():
    evaluator = get_registry().create("judge", "seq2seq")
    assert isinstance(evaluator, Seq2SeqJudge)
    cfg = evaluator.config()
    assert cfg["model"] == PAPER_EVALUATOR_MODEL == "google/flan-t5-large"
    assert (cfg["evidential_token"], cfg["not_evidential_token"], cfg["threshold"]) == ("<EVI>", "<NOT>", 0.5)
    assert evaluator._model is None


def test_adds_label_tokens_into_spare_rows(make_tiny_t5):
    folder = make_tiny_t5(spare_rows=4)
    evaluator = Seq2SeqJudge(model=folder, device="cpu")
    evaluator.warm_up()
    tok, model = evaluator._tokenizer, evaluator._model
    vocab = tok.get_vocab()
    assert "<EVI>" in vocab and "<NOT>" in vocab
    assert evaluator.label_ids == (vocab["<EVI>"], vocab["<NOT>"])
    assert tok.encode("<EVI>", add_special_tokens=False) == [vocab["<EVI>"]]
    assert tok.encode("evidence <NOT> paris", add_special_tokens=False)[1] == vocab["<NOT>"]
    rows = len(tok) - 2 + 4
    assert model.get_input_embeddings().weight.shape[0] == rows  # spare rows used, no resize


def test_adds_label_tokens_and_resizes_when_no_spare_rows(make_tiny_t5):
    folder = make_tiny_t5(spare_rows=0)
    evaluator = Seq2SeqJudge(model=folder, device="cpu")
    evaluator.warm_up()
    n = len(evaluator._tokenizer)
    assert max(evaluator.label_ids) == n - 1
    assert evaluator._model.get_input_embeddings().weight.shape[0] == n
    assert evaluator._model.get_output_embeddings().weight.shape[0] == n
    p = evaluator.probabilities(QUESTION, SETS[:1])
    assert 0.0 < p[0] < 1.0


def test_uses_existing_label_tokens_of_a_trained_checkpoint(make_tiny_t5):
    folder = make_tiny_t5(with_labels=True, spare_rows=0)
    from transformers import AutoTokenizer

    before = len(AutoTokenizer.from_pretrained(folder))
    evaluator = Seq2SeqJudge(model=folder, device="cpu")
    evaluator.warm_up()
    assert len(evaluator._tokenizer) == before
    assert evaluator._model.get_input_embeddings().weight.shape[0] == before


def test_probabilities_match_the_first_decoder_step_and_ignore_padding(make_tiny_t5):
    evaluator = Seq2SeqJudge(model=make_tiny_t5(), device="cpu", batch_size=2)
    probs = evaluator.probabilities(QUESTION, SETS)
    assert len(probs) == 3
    expected = [_hand_probability(evaluator, evaluator.format_input(QUESTION, s)) for s in SETS]
    np.testing.assert_allclose(probs, expected, atol=1e-5)
    # one call per set gives the same numbers as one batched call
    singles = [evaluator.probabilities(QUESTION, [s])[0] for s in SETS]
    np.testing.assert_allclose(probs, singles, atol=1e-5)
    assert evaluator.judge(QUESTION, SETS) == [p >= 0.5 for p in probs]


def test_template_and_separator_shape_the_input(make_tiny_t5):
    evaluator = Seq2SeqJudge(model=make_tiny_t5(), template="question : {question} evidence : {evidence}",
                                 evidence_separator=" | ")
    assert evaluator.format_input("q ?", ["a", "b"]) == "question : q ? evidence : a | b"
    assert Seq2SeqJudge().format_input("Q", ["s1", "s2"]).endswith("Question: Q\nEvidence:\ns1\ns2")


def test_empty_input_loads_nothing():
    evaluator = Seq2SeqJudge(model="/nonexistent/t5")
    assert evaluator.probabilities("q", []) == []
    assert evaluator._model is None


def test_multi_token_labels_are_refused(make_tiny_t5):
    evaluator = Seq2SeqJudge(model=make_tiny_t5(), add_tokens=False)  # "<EVI>" splits into 3 tokens
    with pytest.raises(ConfigError, match="exactly one token"):
        evaluator.warm_up()


def test_existing_words_as_labels_without_adding(make_tiny_t5):
    evaluator = Seq2SeqJudge(model=make_tiny_t5(), add_tokens=False, evidential_token="sufficient",
                                 not_evidential_token="cat", device="cpu")
    from transformers import AutoTokenizer

    evaluator.warm_up()
    assert "<EVI>" not in evaluator._tokenizer.get_vocab()
    assert len(evaluator._tokenizer) == len(AutoTokenizer.from_pretrained(evaluator.params.model))
    assert evaluator.label_ids == (
        evaluator._tokenizer.get_vocab()["sufficient"],
        evaluator._tokenizer.get_vocab()["cat"],
    )


def test_overlong_input_is_refused_not_cut(make_tiny_t5):
    evaluator = Seq2SeqJudge(model=make_tiny_t5(), max_length=8, device="cpu")
    with pytest.raises(PromptTooLongError, match="max_length is 8"):
        evaluator.probabilities(QUESTION, SETS[1:2])


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": -0.1}, "threshold"),
        ({"template": "{question} only"}, r"\{evidence\}"),
        ({"template": "{question} {evidence} {title}"}, "unknown fields"),
        ({"evidential_token": "<X>", "not_evidential_token": "<X>"}, "must differ"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_rejects_bad_params(bad, match):
    with pytest.raises(ConfigError, match=match):
        Seq2SeqJudge(**bad)


@pytest.mark.parametrize(
    "threshold, p, expected", [(0.5, 0.5, True), (0.5, 0.4999, False), (0.0, 0.0, True), (1.0, 0.99, False)]
)
def test_is_evidential_uses_greater_or_equal(threshold, p, expected):
    assert Seq2SeqJudge(threshold=threshold).is_evidential(p) is expected
