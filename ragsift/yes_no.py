"""Two-way next-token probabilities: P(positive) / (P(positive) + P(negative)) from one forward pass.

Shared by every component that asks a language model a Yes/No question and reads the answer
from the logits of two single tokens (never from a top-k list, which may omit both): the causal
evaluator of ECoRAG's reflection, and any Yes/No sentence scorer.

Every function here is pure apart from the one model call in
:func:`causal_two_way_probabilities`, so prompts and token checks are testable without weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsift.errors import ConfigError, PromptTooLongError

__all__ = [
    "single_token_id",
    "chat_prompt",
    "two_way_softmax",
    "causal_two_way_probabilities",
]


def single_token_id(tokenizer: Any, word: str, owner: str) -> int:
    """The id of ``word`` if it encodes to exactly one token (no special tokens); else refuse."""
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ConfigError(
            f"{owner}: the answer token {word!r} must encode to exactly one token of this tokenizer; "
            f"it encodes to {len(ids)} tokens {pieces}. Choose a word that is a single token "
            f"(for example 'Yes' / 'No', or ' Yes' / ' No' for some tokenizers)."
        )
    return int(ids[0])


def chat_prompt(tokenizer: Any, user: str, system: str | None, use_chat_template: bool, owner: str) -> str:
    """The text the model continues: the tokenizer's chat template with a generation prompt, or
    the raw ``user`` text (after ``system`` and a blank line) when ``use_chat_template`` is off."""
    if not use_chat_template:
        return f"{system}\n\n{user}" if system else user
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(
            f"{owner}: use_chat_template is true but the tokenizer has no chat template; "
            f"use an instruction-tuned model or set use_chat_template = false."
        )
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def two_way_softmax(positive_logits: Any, negative_logits: Any) -> list[float]:
    """Softmax over two logits per row: ``exp(p) / (exp(p) + exp(n))`` = ``sigmoid(p - n)``."""
    import torch

    diff = positive_logits.float() - negative_logits.float()
    return [float(x) for x in torch.sigmoid(diff).cpu()]


def _accepts_logits_to_keep(model: Any) -> bool:
    """Whether the forward pass can skip the vocabulary projection of all but the last position
    (saves batch x length x vocabulary floats)."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        return "logits_to_keep" in inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return False


def causal_two_way_probabilities(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    positive_id: int,
    negative_id: int,
    *,
    batch_size: int,
    max_length: int,
    add_special_tokens: bool,
    owner: str,
) -> list[float]:
    """P(positive) over {positive, negative} at the position after each prompt.

    Prompts are batched ``batch_size`` at a time with left padding (pad token = eos when the
    tokenizer has none); position ids follow the attention mask, so a padded prompt gives the
    same logits as the prompt alone. A prompt longer than ``max_length`` tokens raises
    :class:`PromptTooLongError` (it is never cut: the question must stay whole).
    """
    import torch

    if not prompts:
        return []
    encoded = [tokenizer.encode(p, add_special_tokens=add_special_tokens) for p in prompts]
    for i, ids in enumerate(encoded):
        if len(ids) > max_length:
            raise PromptTooLongError(
                f"{owner}: prompt {i} has {len(ids)} tokens but max_length is {max_length}; "
                f"raise max_length (up to the model's context) or judge fewer sentences."
            )
        if not ids:
            raise ConfigError(f"{owner}: prompt {i} encodes to no tokens; check the input template.")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad_id is None:
        raise ConfigError(f"{owner}: the tokenizer has neither a pad nor an eos token to pad batches with.")
    device = next(model.parameters()).device
    extra = {"logits_to_keep": 1} if _accepts_logits_to_keep(model) else {}
    out: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(encoded), batch_size):
            chunk = encoded[start : start + batch_size]
            width = max(len(ids) for ids in chunk)
            input_ids = torch.full((len(chunk), width), int(pad_id), dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, ids in enumerate(chunk):
                input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
                mask[row, width - len(ids) :] = 1
            positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
            logits = model(
                input_ids=input_ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device), **extra
            ).logits[:, -1, :]
            out.extend(two_way_softmax(logits[:, positive_id], logits[:, negative_id]))
    return out
