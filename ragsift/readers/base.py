"""The reader stage: an LLM that answers a question from the (compressed) context."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from pydantic import Field, field_validator

from ragsift.errors import RagsiftError
from ragsift.plugin import Params, Plugin
from ragsift.readers.prompts import (
    EXIT_READER_SYSTEM,
    EXIT_READER_USER,
    ReaderPrompt,
    check_reader_template,
)

__all__ = ["Reader", "ReaderAnswer", "ReaderError", "ReaderParams", "cut_at_stop"]


class ReaderError(RagsiftError):
    """A reader could not produce an answer (server down, bad status, retries exhausted)."""


@dataclass(frozen=True)
class ReaderAnswer:
    """An answer and what it cost. Token counts are ``None`` when the backend does not report them;
    ``seconds`` is the wall time of this answer (its share of the batch for batched readers)."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


class ReaderParams(Params):
    """Settings every reader shares: the prompt templates and stop strings."""

    system_template: str = Field(EXIT_READER_SYSTEM, description="system message; {context} and {query} are filled in")
    user_template: str = Field(EXIT_READER_USER, description="user message; {context} and {query} are filled in")
    stop: list[str] = Field(default_factory=list, description="cut the answer at the first of these strings")
    max_new_tokens: int = Field(100, ge=1, le=32768, description="longest answer, in tokens (EXIT: 100)")

    @field_validator("system_template", "user_template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_reader_template(value)

    @field_validator("stop")
    @classmethod
    def _stop(cls, value: list[str]) -> list[str]:
        if any(not s for s in value):
            raise ValueError("stop strings must be non-empty")
        return value

    def prompt(self) -> ReaderPrompt:
        return ReaderPrompt(self.system_template, self.user_template)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the earliest stop string, stripped."""
    cut = len(text)
    for s in stop:
        pos = text.find(s)
        if pos != -1:
            cut = min(cut, pos)
    return text[:cut].strip()


class Reader(Plugin):
    """Answers questions from a context. Subclasses implement :meth:`answer_many`."""

    stage: ClassVar[str] = "reader"

    Params: ClassVar[type[Params]] = ReaderParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        try:
            self.prompt = self.params.prompt()
        except ValueError as exc:
            from ragsift.errors import ConfigError

            raise ConfigError(f"{type(self).__name__}: {exc}.") from None

    def answer(self, question: str, context: str) -> ReaderAnswer:
        """Answer one question from ``context``."""
        return self.answer_many([question], [context])[0]

    @abstractmethod
    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        """Answer several questions (batched or concurrently), in the order given."""

    def tokenizer_spec(self) -> str | None:
        """A model string whose tokenizer counts this reader's tokens, when one is known."""
        return None

    def secrets(self) -> list[str]:
        """Values that must never be stored or printed (an API key); callers redact them from
        any error text they keep."""
        return []

    def describe(self) -> dict[str, Any]:
        """What a run manifest records about this reader (never secrets)."""
        return {"class": type(self).__qualname__, "config": self.config()}

    def _check_lengths(self, questions: Sequence[str], contexts: Sequence[str]) -> None:
        if len(questions) != len(contexts):
            raise ValueError(f"{type(self).__name__}: {len(questions)} questions but {len(contexts)} contexts.")
