"""Test helpers: tiny random-weight causal LMs (Llama, Gemma) built from a config, hand-built
tokenizers, and a small three-document example. Loaded by path from the tests that use it
(pytest runs with ``--import-mode=importlib``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragsift.types import Document, Example, Sentence

ARCHITECTURES = ("llama", "gemma")

DOCUMENTS = (
    Document(
        "Eiffel Tower", "The Eiffel Tower is in Paris. It was completed in 1889. Gustave Eiffel's company built it."
    ),
    Document("Mont Blanc", "Mont Blanc is the highest mountain in the Alps. Climbers start from Chamonix."),
    Document("Bees", "Honey bees live in colonies. A colony has one queen. Workers collect nectar from flowers."),
)
QUESTION = "When was the Eiffel Tower completed?"


def example() -> tuple[Example, list[Sentence]]:
    """The three-document example and its sentences (rule-based sentencizer)."""
    from ragsift.splitters.sentencizer import SentencizerSplitter

    ex = Example(id="tiny-1", question=QUESTION, answers=("1889",), documents=DOCUMENTS)
    return ex, SentencizerSplitter().split_all(ex.documents)


def build_tiny_lm(arch: str, vocab_size: int, seed: int = 0, **overrides: Any) -> Any:
    """A 2-layer random-weight causal LM of architecture ``arch`` (fp32, eval mode)."""
    import torch
    from transformers import GemmaConfig, GemmaForCausalLM, LlamaConfig, LlamaForCausalLM

    settings: dict[str, Any] = dict(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024,
        initializer_range=0.2, tie_word_embeddings=False,
    )
    settings.update(overrides)
    config_cls, model_cls = {"llama": (LlamaConfig, LlamaForCausalLM), "gemma": (GemmaConfig, GemmaForCausalLM)}[arch]
    torch.manual_seed(seed)
    return model_cls(config_cls(**settings)).eval()


def save_tiny_lm(folder: Path, model: Any, tokenizer: Any) -> str:
    """Save ``model`` and ``tokenizer`` as a model folder that ``ragsift.models`` loads."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


def word_tokenizer(words: list[str], bos: bool = True) -> Any:
    """A whitespace word-level tokenizer over ``words`` that adds ``<bos>`` to whole strings."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    vocab = {w: i for i, w in enumerate(specials + sorted(set(words)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", name_or_path="tiny-word-tokenizer")


def char_tokenizer() -> Any:
    """A character-level tokenizer: "Yes" is three tokens."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,?!'\"\n:"))
    vocab = {c: i for i, c in enumerate(["<unk>", "<eos>", *chars])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>", name_or_path="tiny-char-tokenizer"
    )
