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
    "tokenizer_name",
    "single_token_id",
    "common_prefix_length",
    "encode_prompts",
    "shared_prefix_two_way_probabilities",
    "chat_prompt",
    "two_way_softmax",
    "causal_two_way_probabilities",
]


def tokenizer_name(tokenizer: Any) -> str:
    """How error messages name a tokenizer: its class and where it was loaded from."""
    return f"{type(tokenizer).__name__} '{getattr(tokenizer, 'name_or_path', '') or '?'}'"


def single_token_id(tokenizer: Any, word: str, owner: str) -> int:
    """The id of ``word`` if it encodes to exactly one token (no special tokens); else refuse,
    naming the tokenizer."""
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ConfigError(
            f"{owner}: the tokenizer {tokenizer_name(tokenizer)} encodes {word!r} as {len(ids)} tokens {pieces}; "
            f"the answer token must encode to exactly one token. Choose a model whose tokenizer has it as a "
            f"single token (Gemma, Llama, SmolLM2 have 'Yes' / 'No'), or another answer word."
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


def encode_prompts(tokenizer: Any, prompts: Sequence[str], *, max_length: int, add_special_tokens: bool, owner: str) -> list[list[int]]:
    """Token ids of each prompt; a prompt over ``max_length`` tokens raises
    :class:`PromptTooLongError` (prompts are never cut: the question must stay whole)."""
    encoded = [list(tokenizer.encode(p, add_special_tokens=add_special_tokens)) for p in prompts]
    for i, ids in enumerate(encoded):
        if len(ids) > max_length:
            raise PromptTooLongError(
                f"{owner}: prompt {i} has {len(ids)} tokens but max_length is {max_length}; "
                f"raise max_length (up to the model's context) or judge fewer sentences."
            )
        if not ids:
            raise ConfigError(f"{owner}: prompt {i} encodes to no tokens; check the input template.")
    return encoded


def _forward_accepts(model: Any, name: str) -> bool:
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        return name in inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return False


def _accepts_logits_to_keep(model: Any) -> bool:
    """Whether the forward pass can skip the vocabulary projection of all but the last position
    (saves batch x length x vocabulary floats)."""
    return _forward_accepts(model, "logits_to_keep")


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
    encoded = encode_prompts(tokenizer, prompts, max_length=max_length, add_special_tokens=add_special_tokens, owner=owner)
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


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """How many leading ids all ``seqs`` share (0 for no sequences)."""
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        token = first[i]
        if any(s[i] != token for s in seqs):
            return i
    return n


def _prefix_cache(model: Any) -> Any | None:
    """An empty KV cache that can be cut back to any length, or ``None`` when the model's cache
    has layers that cannot (sliding-window, linear-attention, quantized layers)."""
    try:
        from transformers import DynamicCache

        cache = DynamicCache(config=model.config)
    except Exception:  # an older or different cache API: use padded batches instead
        return None
    layers = getattr(cache, "layers", None)
    if layers is not None and any(type(layer).__name__ != "DynamicLayer" for layer in layers):
        return None
    return cache


def shared_prefix_two_way_probabilities(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    positive_id: int,
    negative_id: int,
    *,
    max_length: int,
    add_special_tokens: bool,
    owner: str,
) -> list[float] | None:
    """Like :func:`causal_two_way_probabilities`, for prompts that share long prefixes (ECoRAG's
    candidate sets: the top 4, top 8, ... sentences under one question).

    The longest prompt runs once and keeps its KV cache; every other prompt reuses the cached
    states of the tokens it shares with it (the longest common prefix of the token ids, so no
    assumption about where the texts diverge) and runs only its own remaining tokens. With a
    causal model this gives the same logits as running each prompt alone, for a fraction of the
    tokens. Returns ``None`` (caller falls back to padded batches) for models whose cache cannot be
    cut back.
    """
    import torch

    if not prompts:
        return []
    encoded = encode_prompts(tokenizer, prompts, max_length=max_length, add_special_tokens=add_special_tokens, owner=owner)
    cache = _prefix_cache(model)
    if cache is None:
        return None
    device = next(model.parameters()).device
    extra = {"logits_to_keep": 1} if _accepts_logits_to_keep(model) else {}
    cache_arg = "cache" if _forward_accepts(model, "cache") else "past_key_values"
    trunk = max(range(len(encoded)), key=lambda i: len(encoded[i]))
    out: list[float | None] = [None] * len(encoded)
    with torch.inference_mode():
        ids = torch.tensor([encoded[trunk]], dtype=torch.long, device=device)
        logits = model(input_ids=ids, use_cache=True, **{cache_arg: cache}, **extra).logits[0, -1]
        out[trunk] = two_way_softmax(logits[positive_id : positive_id + 1], logits[negative_id : negative_id + 1])[0]
        # at least the last token of each prompt runs, to get its next-token logits
        starts = {i: min(common_prefix_length([encoded[i], encoded[trunk]]), len(encoded[i]) - 1) for i in range(len(encoded)) if i != trunk}
        for i in sorted(starts, key=lambda j: -starts[j]):  # the cache only ever shrinks back to a prefix
            surplus = cache.get_seq_length() - starts[i]
            if surplus > 0:  # crop(-n) removes n tokens (crop(0) would empty the cache in older versions)
                cache.crop(-surplus)
            ids = torch.tensor([encoded[i][starts[i] :]], dtype=torch.long, device=device)
            logits = model(input_ids=ids, use_cache=True, **{cache_arg: cache}, **extra).logits[0, -1]
            out[i] = two_way_softmax(logits[positive_id : positive_id + 1], logits[negative_id : negative_id + 1])[0]
    return [float(p) for p in out if p is not None]
