"""The judge stage: is a set of evidence sentences enough to answer the question?

ECoRAG's reflection asks a judge (the paper's "evaluator"), after each step of adding sentences,
whether the evidence collected so far is sufficient. A judge returns P(evidential) for each of
several evidence sets in one batched call; ``is_evidential(p)`` compares with ``threshold``.
Assumption (the evaluator's input is not published): ``template`` filled with ``{question}`` and
``{evidence}``, the set's items (formatted by the caller) joined with ``evidence_separator``.
"""

from __future__ import annotations

import string
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, field_validator

from ragsift.errors import ConfigError
from ragsift.plugin import Params, Plugin

__all__ = ["Judge", "JudgeParams", "check_judge_template"]

TEMPLATE_FIELDS = frozenset({"question", "evidence"})


def check_judge_template(template: str) -> str:
    """A template must use exactly the fields ``{question}`` and ``{evidence}`` (each at least once)."""
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ValueError(f"is not a valid format string ({exc}); write literal braces as '{{{{' and '}}}}'") from None
    unknown = fields - TEMPLATE_FIELDS
    if unknown:
        raise ValueError(f"uses unknown fields {sorted(unknown)}; only {{question}} and {{evidence}} are filled in")
    missing = TEMPLATE_FIELDS - fields
    if missing:
        raise ValueError(f"must contain {', '.join('{' + m + '}' for m in sorted(missing))}")
    return template


class JudgeParams(Params):
    #: a set is evidential when P(evidential) >= threshold
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    template: str = "Question: {question}\nEvidence:\n{evidence}"
    evidence_separator: str = "\n"

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_judge_template(value)


class Judge(Plugin):
    """Judges whether evidence sets suffice to answer a question (ECoRAG's evaluator)."""

    stage: ClassVar[str] = "judge"
    Params: ClassVar[type[Params]] = JudgeParams
    #: names of the params holding the evidential / not-evidential answer tokens (must differ)
    label_params: ClassVar[tuple[str, str] | None] = None

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if self.label_params is not None:
            positive, negative = (getattr(self.params, name) for name in self.label_params)
            if positive == negative:
                raise ConfigError(
                    f"{type(self).__name__}: {self.label_params[0]} and {self.label_params[1]} must differ; "
                    f"both are {positive!r}."
                )
        # the model, its tokenizer and the two answer-token ids, set by warm_up()
        self._model: Any = None
        self._tokenizer: Any = None
        self.label_ids: tuple[int, int] | None = None

    def format_input(self, question: str, evidence: Sequence[str]) -> str:
        """The model input for one evidence set (``template`` filled in)."""
        return self.params.template.format(question=question, evidence=self.params.evidence_separator.join(evidence))

    @abstractmethod
    def probabilities(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[float]:
        """P(evidential) for each evidence set, in one batched call. No sets -> ``[]`` (no model load)."""

    def is_evidential(self, p: float) -> bool:
        """``p >= threshold``."""
        return p >= self.params.threshold

    def judge(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[bool]:
        """``is_evidential`` of each set's probability."""
        return [self.is_evidential(p) for p in self.probabilities(question, evidence_sets)]
