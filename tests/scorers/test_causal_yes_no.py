"""The causal-LM Yes/No scorer (EXIT's classifier) on tiny random-weight Llama and Gemma models,
hand-built tokenizers, and (integration) the offline SmolLM2-135M-Instruct."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_causal_lm as tiny

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.lm import EXIT_TEMPLATE, head_tail, two_way_probability
from ragsift.lm.layouts import common_prefix_length, shared_prefix_groups
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.registry import get_registry
from ragsift.scorers.causal_yes_no import CausalYesNoScorer
from ragsift.types import Document, Example, Sentence

HEAD = "<start_of_turn>user\nQuery:\n{q}\nFull context:\n"
SUFFIX = (
    '\nSentence:\n{s}\nIs this sentence useful in answering the query? Answer only "Yes" or "No".<end_of_turn>\n'
    "<start_of_turn>model\n"
)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(OFFLINE_SMOLLM2)


@pytest.fixture(scope="module")
def models(tok):
    return {arch: tiny.build_tiny_lm(arch, len(tok), seed=i) for i, arch in enumerate(tiny.ARCHITECTURES)}


@pytest.fixture(scope="module")
def ex():
    return tiny.example()


def _hand_scores(model, prompts, yes_id, no_id) -> np.ndarray:
    """Each prompt alone, no batching; P(Yes)/(P(Yes)+P(No)) from the full-vocabulary softmax in float64."""
    import torch

    out = []
    with torch.no_grad():
        for p in prompts:
            logits = model(torch.tensor([p.ids])).logits[0, -1].double()
            probs = torch.softmax(logits, dim=-1)
            out.append(float(probs[yes_id] / (probs[yes_id] + probs[no_id])))
    return np.array(out)


# -- params and registration -------------------------------------------------------------------


def test_registered_and_builds_from_defaults_without_loading():
    scorer = get_registry().create("scorer", "causal-yes-no", {})
    assert isinstance(scorer, CausalYesNoScorer)
    config = scorer.config()
    assert config["model"] == "google/gemma-2b-it" and config["adapter"] == "doubleyyh/exit-gemma-2b"
    assert config["template"] == EXIT_TEMPLATE and config["mode"] == "prefix-shared" and config["overflow"] == "error"
    ex, _ = tiny.example()
    assert scorer.score(ex, []).shape == (0,)
    assert scorer._model is None  # empty input: nothing loaded


def test_exit_template_is_verbatim():
    assert EXIT_TEMPLATE == (
        "<start_of_turn>user\nQuery:\n{query}\nFull context:\n{context}\nSentence:\n{sentence}\n"
        'Is this sentence useful in answering the query? Answer only "Yes" or "No".<end_of_turn>\n'
        "<start_of_turn>model\n"
    )


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"template": "Q {query} C {context}"}, "{sentence} appears 0 times"),
        ({"template": "{sentence} {query} {context}"}, "order"),
        ({"template": "{query}{query}{context}{sentence}"}, "{query} appears 2 times"),
        ({"overflow": "truncate"}, "overflow"),
        ({"mode": "fast"}, "mode"),
        ({"device": "gpu"}, "device"),
        ({"batch_size": 0}, "batch_size"),
        ({"dtype": "int8"}, "dtype"),
        ({"temperature": 1.0}, "unknown parameter 'temperature'"),
    ],
)
def test_bad_params_are_refused(params, needle):
    with pytest.raises(ConfigError, match="CausalYesNoScorer") as info:
        CausalYesNoScorer(**params)
    assert needle in str(info.value)


def test_empty_adapter_means_none():
    assert CausalYesNoScorer(adapter="").params.adapter is None


def test_4bit_on_cpu_is_a_clear_error():
    scorer = CausalYesNoScorer(device="cpu", load_in_4bit=True)
    with pytest.raises(ConfigError, match="4-bit loading needs CUDA"):
        scorer.warm_up()


# -- prompts ------------------------------------------------------------------------------------


def test_prompt_ids_are_the_pieces_of_the_own_document(tok, models, ex):
    example, sentences = ex
    scorer = CausalYesNoScorer.from_model(models["llama"], tok)
    prompts = scorer.prompts(example, sentences)
    assert len(prompts) == len(sentences) == 8
    for sentence, prompt in zip(sentences, prompts, strict=True):
        doc = example.documents[sentence.doc_index]
        expected = (
            tok.encode(HEAD.format(q=example.question), add_special_tokens=False)
            + tok.encode(f"{doc.title}\n{doc.text}", add_special_tokens=False)
            + tok.encode(SUFFIX.format(s=sentence.text), add_special_tokens=False)
        )
        assert prompt.ids == expected  # SmolLM2 adds no BOS to whole strings
        text = tok.decode(prompt.ids)
        assert f"Full context:\n{doc.title}\n{doc.text}\nSentence:\n{sentence.text}\n" in text
        shown = text.split("Full context:\n", 1)[1].split("\nSentence:\n", 1)[0]
        assert shown == f"{doc.title}\n{doc.text}"  # the own document and nothing else
        for other in example.documents:
            if other is not doc:
                assert other.text not in text
    # every sentence of one document shares the same prefix ids
    by_doc = {}
    for sentence, prompt in zip(sentences, prompts, strict=True):
        by_doc.setdefault(sentence.doc_index, set()).add(prompt.prefix)
    assert all(len(prefixes) == 1 for prefixes in by_doc.values())


def test_bos_is_added_once_when_the_tokenizer_adds_it():
    words = ["Yes", "No", "Q:", "C:", "S:", "what", "is", "it", "?", "A", "B", "C", "D", "a", "b", "c", "d"]
    tok = tiny.word_tokenizer(words, bos=True)
    assert tok.encode("Yes")[0] == tok.bos_token_id
    model = tiny.build_tiny_lm("gemma", len(tok))
    template = "Q: {query} C: {context} S: {sentence} ?"
    scorer = CausalYesNoScorer.from_model(model, tok, template=template)
    example = Example("w", "what is it", (), (Document("A", "a b c d"),))
    prompt = scorer.prompts(example, [Sentence(0, 0, 0, 3, "a b")])[0]
    assert prompt.ids == [tok.bos_token_id] + tok.encode(
        "Q: what is it C: A\na b c d S: a b ?", add_special_tokens=False
    )
    assert prompt.ids.count(tok.bos_token_id) == 1
    no_bos = CausalYesNoScorer.from_model(model, tiny.word_tokenizer(words, bos=False), template=template)
    assert no_bos.prompts(example, [Sentence(0, 0, 0, 3, "a b")])[0].ids[0] != tok.bos_token_id


def test_tokenizer_with_multi_token_yes_is_refused():
    tok = tiny.char_tokenizer()
    assert len(tok.encode("Yes", add_special_tokens=False)) == 3
    model = tiny.build_tiny_lm("llama", len(tok))
    with pytest.raises(ConfigError, match="tiny-char-tokenizer") as info:
        CausalYesNoScorer.from_model(model, tok)
    assert "'Yes' as 3 tokens" in str(info.value)


# -- scores ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["reference", "prefix-shared"])
def test_score_is_the_yes_no_softmax_of_hand_computed_logits(tok, models, ex, mode):
    example, sentences = ex
    model = models["llama"]
    scorer = CausalYesNoScorer.from_model(model, tok, mode=mode, batch_size=3)
    scores = scorer.score(example, sentences)
    hand = _hand_scores(model, scorer.prompts(example, sentences), tok.encode("Yes", add_special_tokens=False)[0],
                        tok.encode("No", add_special_tokens=False)[0])
    assert scores.dtype == np.float64 and scores.shape == (len(sentences),)
    assert np.abs(scores - hand).max() <= 1e-5
    assert scores.std() > 0.01  # the random model separates sentences: the comparison means something


def test_yes_probability_uses_only_the_two_logits():
    import torch

    logits = torch.tensor([[0.0, 2.0, -1.0, 5.0], [1.0, 1.0, 1.0, 9.0]])
    got = two_way_probability(logits[:, 1], logits[:, 2])
    assert torch.allclose(got, torch.tensor([1 / (1 + np.exp(-3.0)), 0.5]).float())
    assert got[1].item() == 0.5  # equal logits: exactly one half


@pytest.mark.parametrize("batch_size", [2, 8])
@pytest.mark.parametrize("arch", tiny.ARCHITECTURES)
def test_prefix_shared_equals_reference(tok, models, ex, arch, batch_size):
    example, sentences = ex
    model = models[arch]
    ref = CausalYesNoScorer.from_model(model, tok, mode="reference").score(example, sentences)
    shared = CausalYesNoScorer.from_model(model, tok, mode="prefix-shared", batch_size=batch_size)
    got = shared.score(example, sentences)
    assert np.abs(got - ref).max() <= 1e-4
    assert ref.std() > 0.01
    # tokens run: the shared start once, each document's rest of prefix once, every suffix once
    groups = shared_prefix_groups(shared.prompts(example, sentences))
    root = common_prefix_length([g.prefix for g in groups])
    assert len(groups) == 3 and root > 0
    assert shared.stats["tokens"] == root + sum(len(g.prefix) - root + sum(map(len, g.suffixes)) for g in groups)
    assert shared.stats["tokens"] < 0.6 * sum(len(p) for p in shared.prompts(example, sentences))
    # passes: the shared start, then per document one pass per batch_size suffixes (its context
    # rides in the first); with batch_size 2 some document needs a second pass on the cached context
    passes = [-(-len(g.suffixes) // batch_size) for g in groups]
    assert shared.stats["forward_passes"] == 1 + sum(passes)
    assert batch_size == 8 or max(passes) > 1


def test_prefix_shared_refuses_a_sliding_window_shorter_than_the_prompts(tok, ex):
    example, sentences = ex
    model = tiny.build_tiny_lm("llama", len(tok))
    model.config.sliding_window = 32
    with pytest.raises(ConfigError, match="sliding attention window"):
        CausalYesNoScorer.from_model(model, tok).score(example, sentences)
    assert CausalYesNoScorer.from_model(model, tok, mode="reference").score(example, sentences[:1]).shape == (1,)


@pytest.mark.parametrize("mode", ["reference", "prefix-shared"])
def test_batch_size_invariance(tok, models, ex, mode):
    example, sentences = ex
    results = [
        CausalYesNoScorer.from_model(models["gemma"], tok, mode=mode, batch_size=bs).score(example, sentences)
        for bs in (1, 2, 3, 8, 64)
    ]
    for other in results[1:]:
        assert np.abs(other - results[0]).max() <= 1e-5


def test_scores_follow_the_order_given(tok, models, ex):
    example, sentences = ex
    scorer = CausalYesNoScorer.from_model(models["llama"], tok)
    forward = scorer.score(example, sentences)
    backward = scorer.score(example, sentences[::-1])
    assert np.abs(forward - backward[::-1]).max() <= 1e-5


# -- overflow ------------------------------------------------------------------------------------------


def _long_example() -> tuple[Example, list[Sentence]]:
    filler = " ".join(f"Filler sentence number {i} talks about nothing at all." for i in range(40))
    text = "The answer is 42. " + filler + " The end is near."
    doc = Document("Long", text)
    return Example("long-1", "What is the answer?", ("42",), (doc,)), [
        Sentence(0, 0, 0, 17, "The answer is 42."),
        Sentence(0, 1, len(text) - 16, len(text), "The end is near."),
    ]


def test_overflow_error_names_example_sentence_and_lengths(tok, models):
    example, sentences = _long_example()
    scorer = CausalYesNoScorer.from_model(models["llama"], tok, max_length=200)
    assert scorer.encoder.max_length == 200
    with pytest.raises(PromptTooLongError) as info:
        scorer.score(example, sentences)
    message = str(info.value)
    assert "'long-1'" in message and "sentence 0:0" in message and "max_length 200" in message
    assert 'overflow = "head-tail"' in message


@pytest.mark.parametrize("arch", tiny.ARCHITECTURES)
def test_head_tail_cuts_only_the_context(tok, models, arch):
    example, sentences = _long_example()
    scorer = CausalYesNoScorer.from_model(models[arch], tok, max_length=200, overflow="head-tail")
    prompts = scorer.prompts(example, sentences)
    context = tok.encode(f"Long\n{example.documents[0].text}", add_special_tokens=False)
    head = tok.encode(HEAD.format(q=example.question), add_special_tokens=False)
    for sentence, prompt in zip(sentences, prompts, strict=True):
        suffix = tok.encode(SUFFIX.format(s=sentence.text), add_special_tokens=False)
        assert len(prompt) == 200 and prompt.truncated
        budget = 200 - len(head) - len(suffix)
        assert prompt.ids == head + context[: (budget + 1) // 2] + context[len(context) - budget // 2 :] + suffix
        assert prompt.ids == head + head_tail(context, budget) + suffix
        assert f"\nSentence:\n{sentence.text}\n" in tok.decode(prompt.suffix)  # the sentence survives intact
    ref = CausalYesNoScorer.from_model(models[arch], tok, max_length=200, overflow="head-tail", mode="reference")
    assert np.abs(scorer.score(example, sentences) - ref.score(example, sentences)).max() <= 1e-4


def test_head_tail_cannot_cut_the_sentence(tok, models):
    example, sentences = _long_example()
    scorer = CausalYesNoScorer.from_model(models["llama"], tok, max_length=40, overflow="head-tail")
    with pytest.raises(PromptTooLongError, match="never cut"):
        scorer.score(example, sentences)


def test_max_length_is_capped_by_the_model(tok):
    model = tiny.build_tiny_lm("llama", len(tok), max_position_embeddings=300)
    assert CausalYesNoScorer.from_model(model, tok).encoder.max_length == 300
    assert CausalYesNoScorer.from_model(tiny.build_tiny_lm("llama", len(tok)), tok).encoder.max_length == 1024


# -- loading from a folder, with a LoRA adapter -------------------------------------------------------


@pytest.mark.slow
def test_folder_model_with_lora_adapter(tok, ex, tmp_path):
    from peft import LoraConfig, get_peft_model

    example, sentences = ex
    base = tiny.build_tiny_lm("gemma", len(tok), seed=7)
    folder = tiny.save_tiny_lm(tmp_path / "gemma", base, tok)
    lora = get_peft_model(tiny.build_tiny_lm("gemma", len(tok), seed=7),
                          LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    plain = CausalYesNoScorer(model=folder, adapter="", device="cpu").score(example, sentences)
    adapted = CausalYesNoScorer(model=folder, adapter=str(tmp_path / "adapter"), device="cpu")
    scores = adapted.score(example, sentences)
    assert type(adapted._model).__name__.startswith("Peft")
    assert np.abs(scores - plain).max() > 1e-3  # the adapter changes the scores
    hand = _hand_scores(
        lora.eval(), adapted.prompts(example, sentences), adapted.engine.positive_id, adapted.engine.negative_id
    )
    assert np.abs(scores - hand).max() <= 1e-4
    ref = CausalYesNoScorer(model=folder, adapter=str(tmp_path / "adapter"), device="cpu", mode="reference")
    assert np.abs(ref.score(example, sentences) - scores).max() <= 1e-4


# -- the real offline SmolLM2 ---------------------------------------------------------------------------


def _development_example() -> Example:
    """A HotpotQA TRAIN question (development data, not the evaluation set): its two gold
    documents and a distractor about something else."""
    from ragsift.types import sentence_spans_from_list

    raw = json.loads((Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json").read_text())
    item = next(r for r in raw if r["question"].startswith("What language were books being translated into"))
    wanted = {title for title, _ in item["supporting_facts"]} | {"Preservation of the Sign Language"}
    docs = []
    for title, sents in item["context"]:
        if title in wanted:
            text, spans = sentence_spans_from_list(sents)
            docs.append(Document(title, text, sentence_spans=spans))
    assert len(docs) == 3
    return Example(item["_id"], item["question"], (item["answer"],), tuple(docs))


@pytest.mark.integration
@pytest.mark.slow
def test_smollm2_ranks_the_answer_sentence_above_an_unrelated_one():
    import tomllib

    example = _development_example()
    sentences = get_registry().create("splitter", "presplit", {}).split_all(example.documents)
    answer = next(s for s in sentences if "(Latin for" in s.text)  # answer: Latin
    unrelated = next(s for s in sentences if "scarlet fever" in s.text)
    spec = tomllib.loads((Path(__file__).parents[2] / "configs" / "exit-offline.toml").read_text())["compressor"][
        "scorer"
    ]
    params = {k: v for k, v in spec.items() if k != "name"}
    scorer = get_registry().create("scorer", "causal-yes-no", params)
    scores = scorer.score(example, [answer, unrelated])
    assert scores[0] > scores[1] + 0.05
    ref = CausalYesNoScorer(**{**params, "mode": "reference"})
    assert np.abs(ref.score(example, [answer, unrelated]) - scores).max() <= 1e-4
