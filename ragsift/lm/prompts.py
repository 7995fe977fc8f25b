"""Encoded prompts of a language model asked a two-way question: token checks, chat wrapping,
length limits. Pure functions of a tokenizer (no model needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.errors import ConfigError, PromptTooLongError

__all__ = [
    "DEFAULT_MAX_LENGTH", "EncodedPrompt", "single_token_id", "chat_prompt",
    "leading_special_ids", "resolve_max_length", "encode_prompts"
]

#: the EXIT reference code's cap on prompt length (tokens)
DEFAULT_MAX_LENGTH = 4096
# tokenizers report this (or larger) when they have no limit of their own
_UNLIMITED = 1_000_000


@dataclass(frozen=True)
class EncodedPrompt:
    """A prompt's ids in two parts: ``prefix`` (for EXIT: BOS + head + document context, the same
    for every sentence of a document unless its context was cut differently) and ``suffix``."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    context_length: int = 0  # context tokens before truncation (EXIT prompts)
    truncated: bool = False

    @property
    def ids(self) -> list[int]:
        return [*self.prefix, *self.suffix]

    def __len__(self) -> int:
        return len(self.prefix) + len(self.suffix)


def single_token_id(tokenizer: Any, word: str, owner: str) -> int:
    """The id of ``word`` if it encodes to exactly one token (no special tokens); else refuse,
    naming the tokenizer."""
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        name = f"{type(tokenizer).__name__} '{getattr(tokenizer, 'name_or_path', '') or '?'}'"
        raise ConfigError(
            f"{owner}: the tokenizer {name} encodes {word!r} as {len(ids)} tokens "
            f"{pieces}; the answer token must encode to exactly one token. Choose a model whose tokenizer "
            f"has it as a single token (Gemma, Llama, SmolLM2 have 'Yes' / 'No'), or another answer word."
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
    system_turn = [{"role": "system", "content": system}] if system else []
    messages = [*system_turn, {"role": "user", "content": user}]
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def leading_special_ids(tokenizer: Any) -> list[int]:
    """``[bos]`` if the tokenizer puts BOS in front of a whole string, else ``[]``."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return []
    with_special = tokenizer.encode("Yes")
    without = tokenizer.encode("Yes", add_special_tokens=False)
    if len(with_special) > len(without) and with_special[0] == bos:
        return [int(bos)]
    return []


def resolve_max_length(requested: int | None, model_config: Any, tokenizer: Any) -> int:
    """min(requested or 4096, the model's max positions, the tokenizer's max length)."""
    limits = [requested if requested is not None else DEFAULT_MAX_LENGTH]
    model_limit = getattr(model_config, "max_position_embeddings", None)
    for limit in (model_limit, getattr(tokenizer, "model_max_length", None)):
        if isinstance(limit, int) and 0 < limit < _UNLIMITED:
            limits.append(limit)
    return min(limits)


def encode_prompts(
    tokenizer: Any, prompts: Sequence[str], *, max_length: int, add_special_tokens: bool, owner: str
) -> list[EncodedPrompt]:
    """Each whole prompt string as one suffix; a prompt over ``max_length`` tokens raises
    :class:`PromptTooLongError` (prompts are never cut: the question must stay whole)."""
    out = []
    for i, prompt in enumerate(prompts):
        ids = tuple(tokenizer.encode(prompt, add_special_tokens=add_special_tokens))
        if len(ids) > max_length:
            raise PromptTooLongError(
                f"{owner}: prompt {i} has {len(ids)} tokens but max_length is {max_length}; "
                f"raise max_length (up to the model's context) or judge fewer sentences."
            )
        if not ids:
            raise ConfigError(f"{owner}: prompt {i} encodes to no tokens; check the input template.")
        out.append(EncodedPrompt((), ids))
    return out
