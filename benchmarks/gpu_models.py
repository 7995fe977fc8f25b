"""The GPU check's tiny random-weight models and synthetic questions (benchmarks/gpu_check.py): built from
configs with the seed architectures (Gemma-2, T5, BERT) and word-level tokenizers, so nothing is downloaded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["make_examples", "save_bert", "save_gemma2", "save_t5", "sentences_of", "word_tokenizer"]


def make_examples(n_questions: int, n_documents: int, sentences_per_document: int, words_per_sentence: int,
                  seed: int) -> list[Any]:
    """Questions over documents of random words ``w0``..., each split into sentences (``sentence_spans``, so no
    sentence splitter is needed) with the first sentence of the first two documents as gold evidence."""
    from ragsift.types import Document, EvidenceSpan, Example

    rng = np.random.default_rng(seed)
    examples = []
    for q in range(n_questions):
        documents, evidence = [], []
        for d in range(n_documents):
            sentences = [" ".join(f"w{i}" for i in rng.integers(0, 500, words_per_sentence)) + " ."
                         for _ in range(sentences_per_document)]
            spans, start = [], 0
            for s in sentences:
                spans.append((start, start + len(s)))
                start += len(s) + 1
            documents.append(Document(title=f"title{q}x{d}", text=" ".join(sentences), sentence_spans=tuple(spans)))
            if d < 2:
                evidence.append(EvidenceSpan(d, *spans[0]))
        question = " ".join(f"w{i}" for i in rng.integers(0, 500, 8)) + " ?"
        examples.append(Example(id=f"q{q}", question=question, answers=("w1",), documents=tuple(documents),
                                evidence=tuple(evidence)))
    return examples


def sentences_of(example: Any) -> list[Any]:
    from ragsift.splitters.presplit import PresplitSplitter

    return PresplitSplitter().split_all(example.documents)


def word_tokenizer(extra: list[str]) -> Any:
    """A whitespace word-level tokenizer: ``w0``..``w499``, ``.``, ``?``, titles, Yes/No and ``extra`` words;
    ``<bos>`` before every string (as Gemma's tokenizer)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = [f"w{i}" for i in range(500)] + [".", "?", "Yes", "No"] + extra
    vocab = {w: i for i, w in enumerate(dict.fromkeys(["<pad>", "<bos>", "<eos>", "<unk>", *words]))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", name_or_path="gpu-check-words")


def save_gemma2(folder: Path, shape: dict[str, Any], seed: int) -> str:
    """A random-weight Gemma-2 (EXIT's classifier's architecture) and its tokenizer, saved as a model folder."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM

    from ragsift.lm import EXIT_TEMPLATE

    tokenizer = word_tokenizer(EXIT_TEMPLATE.format(query="", context="", sentence="").split())
    # logits of spread ~2 whatever the width: probabilities neither all 0.5 nor all saturated
    config = Gemma2Config(vocab_size=len(tokenizer), max_position_embeddings=2048, sliding_window=2048,
                          query_pre_attn_scalar=shape["head_dim"], initializer_range=2 / math.sqrt(shape["hidden_size"]),
                          pad_token_id=0, bos_token_id=1, eos_token_id=2, **shape)
    torch.manual_seed(seed)
    Gemma2ForCausalLM(config).eval().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


def save_t5(folder: Path, shape: dict[str, Any], words: list[str], seed: int) -> str:
    """A random-weight T5 (ECoRAG's evaluator's architecture) whose tokenizer already holds ``<EVI>`` / ``<NOT>``
    (as a trained checkpoint: no embedding rows are added at load, so every load has the same weights)."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in words:
        vocab.setdefault(word.lower(), len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    tokenizer.add_tokens(["<EVI>", "<NOT>"], special_tokens=True)
    torch.manual_seed(seed)
    settings: dict[str, Any] = dict(vocab_size=len(tokenizer), decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                                    tie_word_embeddings=False, **shape)
    model = T5ForConditionalGeneration(T5Config(**settings)).eval()
    with torch.no_grad():  # T5's output layer starts at std 1: logits so large that every probability is 0 or 1
        model.lm_head.weight.mul_(2 / math.sqrt(shape["d_model"]))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def save_bert(folder: Path, shape: dict[str, Any], seed: int) -> str:
    """A random-weight BERT (Contriever's architecture; a plain transformers folder, so mean pooling)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "?", *(f"w{i}" for i in range(500))]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5 builds the tokenizer from ``vocab`` (and ignores a vocab_file); transformers 4 needs the file
    makers = (lambda: BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True),
              lambda: BertTokenizer(vocab_file=str(folder / "vocab.txt"), do_lower_case=True))
    tokenizer = None
    for make in makers:
        try:
            tokenizer = make()
        except TypeError:
            continue
        if len(tokenizer) == len(vocab):
            break
    if tokenizer is None or len(tokenizer) != len(vocab):  # every word [UNK]: all scores equal, the comparison empty
        raise RuntimeError(f"could not build a BERT tokenizer holding the {len(vocab)} words")
    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=len(vocab), max_position_embeddings=512, **shape)).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
