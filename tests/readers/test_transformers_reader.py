"""The transformers reader on a tiny random-weight Llama (SmolLM2's tokenizer), and on SmolLM2."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ragsift.errors import PromptTooLongError
from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer
from ragsift.readers.transformers_reader import TransformersReader


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = load_tokenizer(OFFLINE_SMOLLM2)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_greedy_answers_are_deterministic_and_bounded(tiny_llama: Path) -> None:
    reader = TransformersReader(model=str(tiny_llama), device="cpu", max_new_tokens=5, batch_size=2)
    questions = ["Who wrote Hamlet?", "Where is Paris?", "When?"]
    contexts = ["Hamlet is a play by Shakespeare.", "Paris is in France.", ""]
    first = reader.answer_many(questions, contexts)
    again = reader.answer_many(questions, contexts)
    assert [a.text for a in first] == [a.text for a in again]
    for answer in first:
        assert 1 <= answer.completion_tokens <= 5
        assert answer.prompt_tokens > 20 and answer.seconds > 0
    single = reader.answer(questions[0], contexts[0])
    assert single.prompt_tokens == first[0].prompt_tokens


def test_chat_template_is_used_when_the_tokenizer_has_one(tiny_llama: Path) -> None:
    reader = TransformersReader(model=str(tiny_llama), device="cpu")
    ids = reader.encode_prompt("Who?", "Some context.")
    decoded = reader._tokenizer.decode(ids)
    assert "<|im_start|>system" in decoded and "Context information is below." in decoded
    assert decoded.rstrip().endswith("<|im_start|>assistant")
    # without a chat template: system and user joined by a newline
    reader._tokenizer = copy.deepcopy(reader._tokenizer)
    reader._tokenizer.chat_template = None
    decoded = reader._tokenizer.decode(reader.encode_prompt("Who?", "Some context."), skip_special_tokens=True)
    assert "<|im_start|>" not in decoded
    assert decoded.endswith("answer the query. Do not provide any explanation.\nQuery: Who?\nAnswer:")


def test_overlong_prompt_raises_with_the_lengths(tiny_llama: Path) -> None:
    reader = TransformersReader(model=str(tiny_llama), device="cpu", max_new_tokens=10)
    with pytest.raises(PromptTooLongError, match=r"prompt has \d+ tokens .* 10 more, .* accepts 512"):
        reader.answer("q", "word " * 600)
    small = TransformersReader(model=str(tiny_llama), device="cpu", max_new_tokens=10, max_input_tokens=64)
    with pytest.raises(PromptTooLongError, match="accepts 64"):
        small.answer("q", "word " * 40)


def test_stop_strings_cut_the_answer() -> None:
    from ragsift.readers.base import cut_at_stop

    assert cut_at_stop(" Paris\nExplanation: ...", ["\n"]) == "Paris"
    assert cut_at_stop("Paris. Because", [".", " B"]) == "Paris"
    assert cut_at_stop("Paris", []) == "Paris"


@pytest.mark.integration
@pytest.mark.slow
def test_smollm2_answers_from_the_context() -> None:
    reader = TransformersReader(model=OFFLINE_SMOLLM2, device="cpu", max_new_tokens=24)
    answer = reader.answer("What is the capital of France?", "Paris is the capital and largest city of France.")
    assert "Paris" in answer.text
    assert reader.tokenizer_spec() == OFFLINE_SMOLLM2
    assert "sha256" in reader.describe()["model"]
