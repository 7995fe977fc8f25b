"""Test helpers for the encoder trainers: a tiny random-weight BERT built from a config (no
downloads) with a word-level vocabulary of the questions and documents it will see, and the
training / development questions those tests train on (never the evaluation file)."""

from __future__ import annotations

import re
from pathlib import Path

from ragsift.datasets import load_examples
from ragsift.types import Example

__all__ = ["DATA", "save_tiny_bert", "tiny_bert_and_data"]

DATA = Path(__file__).resolve().parent / "data"


def save_tiny_bert(folder: Path, texts: list[str], max_words: int = 400, layers: int = 1, **config: object) -> str:
    """A BERT of ``layers`` layers (hidden size 32; ``config``: other ``BertConfig`` settings) and its
    tokenizer saved in ``folder``; the vocabulary is the first ``max_words`` words of ``texts`` in sorted order."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})[:max_words]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # the vocabulary as a mapping: transformers 5 ignores ``vocab_file`` here (every word would be [UNK])
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    if words and tokenizer.convert_tokens_to_ids(words[0]) != 5:
        raise AssertionError("the tiny BERT's tokenizer lost its vocabulary")
    torch.manual_seed(0)
    bert = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=128, **config)
    BertModel(bert).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def tiny_bert_and_data(folder: Path, train_limit: int, dev_limit: int,
                       max_words: int = 400) -> tuple[list[Example], list[Example], str]:
    """(training questions, development questions, tiny BERT folder whose vocabulary covers them)."""
    train = list(load_examples(DATA / "hotpotqa-train-sf100.json", limit=train_limit))
    dev = list(load_examples(DATA / "hotpotqa-dev-ircot52-sf.json", limit=dev_limit))
    texts = [e.question for e in train + dev] + [d.text for e in train + dev for d in e.documents]
    return train, dev, save_tiny_bert(folder, texts, max_words)
