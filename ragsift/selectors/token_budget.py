"""Greedy selection by score under a token budget counted in a named tokenizer."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["TokenBudgetSelector", "TokenCountingSelector", "count_tokens"]

_WORDS = re.compile(r"\S+")


def count_tokens(tokenizer: Any, text: str) -> int:
    """Tokens of ``text``: whitespace words when ``tokenizer`` is None, else without special tokens."""
    if tokenizer is None:
        return len(_WORDS.findall(text))
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


class TokenCountingSelector(Selector):
    """A selector that counts tokens in the tokenizer its ``tokenizer`` param names ("whitespace":
    words), loaded on first use."""

    _tokenizer: Any = None

    def required_extras(self) -> tuple[str, ...]:
        from ragsift.models import tokenizer_extras

        return () if self.params.tokenizer == "whitespace" else tokenizer_extras(self.params.tokenizer)

    def warm_up(self) -> None:
        if self.params.tokenizer != "whitespace" and self._tokenizer is None:
            from ragsift.models import load_tokenizer

            self._tokenizer = load_tokenizer(self.params.tokenizer)


class TokenBudgetParams(Params):
    budget: int = Field(256, ge=1)
    #: "whitespace" (words) or a model location whose tokenizer counts (see ragsift.models)
    tokenizer: str = "whitespace"


class TokenBudgetSelector(TokenCountingSelector):
    """Walks sentences from the best score down and keeps each one that still fits.

    The budget bounds the sum of the kept sentences' token counts; a sentence that does not fit
    is skipped and smaller ones below it may still be taken.
    """

    Params = TokenBudgetParams

    def token_budget(self) -> tuple[int, Callable[[str], int]] | None:
        self.warm_up()
        return self.params.budget, lambda text: count_tokens(self._tokenizer, text)

    def token_counts(self, sentences: Sequence[Sentence]) -> list[int]:
        self.warm_up()
        return [count_tokens(self._tokenizer, s.text) for s in sentences]

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if not sentences:
            return Selection([], {"tokens": 0})
        counts = self.token_counts(sentences)
        used, kept = 0, []
        for i in rank_by_score(scores):
            if used + counts[i] <= self.params.budget:
                kept.append(i)
                used += counts[i]
        return Selection(kept, {"tokens": used})
