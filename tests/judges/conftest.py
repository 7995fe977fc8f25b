"""Tiny random-weight models for the evaluator tests, built from a config (no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

T5_WORDS = [
    "is",
    "the",
    "evidence",
    "sufficient",
    "to",
    "answer",
    "question",
    "?",
    ":",
    "paris",
    "capital",
    "of",
    "france",
    "who",
    "wrote",
    "book",
    "hamlet",
    "shakespeare",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
]


def build_tiny_t5(folder: Path, *, spare_rows: int = 4, with_labels: bool = False, seed: int = 0) -> str:
    """A 1-layer T5 with a word-level tokenizer (``</s>`` appended, ``<pad>`` = 0 = decoder start).

    ``spare_rows``: embedding rows beyond the tokenizer's size (T5 checkpoints keep some);
    ``with_labels``: the tokenizer already has ``<EVI>`` / ``<NOT>`` (a trained checkpoint).
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in T5_WORDS:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    if with_labels:
        tokenizer.add_tokens(["<EVI>", "<NOT>"], special_tokens=True)
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer) + spare_rows, d_model=16, d_ff=32, d_kv=8, num_layers=1, num_decoder_layers=1,
        num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, tie_word_embeddings=False,
    )
    folder.mkdir(parents=True, exist_ok=True)
    T5ForConditionalGeneration(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> str:
    """A 2-layer Llama with SmolLM2's real tokenizer (and chat template)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from ragsift.models import OFFLINE_SMOLLM2, load_tokenizer

    tokenizer = load_tokenizer(OFFLINE_SMOLLM2)
    folder = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=2048, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture
def make_tiny_t5(tmp_path):
    """Build a fresh tiny T5 folder per call (models are cached per folder, so each test that
    mutates a tokenizer gets its own)."""
    counter = iter(range(1000))

    def make(**kwargs) -> str:
        return build_tiny_t5(tmp_path / f"t5-{next(counter)}", **kwargs)

    return make
