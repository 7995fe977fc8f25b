"""Language-model building blocks shared by scorers, judges, trainers and baselines: encoded
prompts, batch layouts (:mod:`ragsift.lm.layouts`) and the Yes/No engine."""

from __future__ import annotations

from ragsift.lm.engine import LAYOUTS, Layout, YesNoEngine, two_way_probability
from ragsift.lm.prompts import (
    DEFAULT_MAX_LENGTH,
    EncodedPrompt,
    chat_prompt,
    encode_prompts,
    leading_special_ids,
    resolve_max_length,
    single_token_id,
)
from ragsift.lm.sentence_prompt import (
    EXIT_TEMPLATE,
    YesNoPromptEncoder,
    YesNoTemplate,
    document_context,
    head_tail,
)

__all__ = [
    "DEFAULT_MAX_LENGTH", "EXIT_TEMPLATE", "LAYOUTS", "EncodedPrompt", "Layout", "YesNoEngine", "YesNoPromptEncoder",
    "YesNoTemplate", "chat_prompt", "document_context", "encode_prompts", "head_tail", "leading_special_ids",
    "resolve_max_length", "single_token_id", "two_way_probability",
]
