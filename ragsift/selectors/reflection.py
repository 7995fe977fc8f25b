"""ECoRAG's reflection: grow the evidence in rank order until a judge says it suffices.

Candidate sets are the top k sentences by score for k = step, 2*step, ... up to ``max_sentences``;
the first set the judge (the paper's "evaluator", a plugin of the ``judge`` stage) finds
evidential is kept, else the largest. ``sequential`` (the paper's loop) and ``batched`` (every set
in one judge call) select exactly the same sentences. Details and assumptions: docs/ecorag.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ragsift.plugin import Params, PluginSpec, merge_spec
from ragsift.registry import build_plugin
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["ReflectionSelector", "ReflectionParams", "candidate_sizes", "DEFAULT_JUDGE"]

#: the paper's evaluator (the fine-tuned checkpoint is not public; see ragsift.judges.seq2seq)
DEFAULT_JUDGE: dict[str, Any] = {"name": "seq2seq", "model": "google/flan-t5-large"}


def candidate_sizes(n: int, step: int, max_sentences: int) -> list[int]:
    """k of each candidate set: step, 2*step, ... below the cap, then the cap = min(max, n)."""
    cap = min(max_sentences, n)
    if cap <= 0:
        return []
    return [*range(step, cap, step), cap]


class ReflectionParams(Params):
    #: the judge: a plugin name or a table (``name`` + params); without ``name``, the params
    #: override the default judge's
    judge: PluginSpec = Field(default_factory=lambda: dict(DEFAULT_JUDGE))
    step: int = Field(default=4, ge=1)
    max_sentences: int = Field(default=20, ge=1)
    mode: Literal["sequential", "batched"] = "sequential"
    evidence_template: str = "{title}: {sentence}"

    @field_validator("judge")
    @classmethod
    def _judge_over_default(cls, value: dict[str, Any]) -> dict[str, Any]:
        return merge_spec(DEFAULT_JUDGE, value)

    @field_validator("evidence_template")
    @classmethod
    def _template(cls, value: str) -> str:
        try:
            value.format(title="t", sentence="s")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"may only use {{title}} and {{sentence}} ({type(exc).__name__}: {exc})") from None
        if "{sentence}" not in value:
            raise ValueError("must contain {sentence}")
        return value

    @model_validator(mode="after")
    def _max_at_least_step(self) -> ReflectionParams:
        if self.max_sentences < self.step:
            raise ValueError(
                f"max_sentences ({self.max_sentences}) must be >= step ({self.step}); raise max_sentences or lower step"
            )
        return self


class ReflectionSelector(Selector):
    """Keeps the smallest top-k (k a multiple of ``step``) that the judge finds sufficient."""

    Params = ReflectionParams
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.judge = build_plugin("judge", self.params.judge, "ReflectionSelector judge")

    def config(self) -> dict[str, Any]:
        out = super().config()
        out["judge"] = {"name": self.params.judge["name"], **self.judge.config()}
        return out

    def warm_up(self) -> None:
        self.judge.warm_up()

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        return min(self.params.max_sentences, len(sentences))

    def evidence_items(self, example: Example, sentences: Sequence[Sentence], order: Sequence[int]) -> list[str]:
        """The judge's view of each ranked sentence (``evidence_template`` filled in)."""
        template = self.params.evidence_template
        items = []
        for i in order:
            s = sentences[i]
            title = example.documents[s.doc_index].title if s.doc_index < len(example.documents) else ""
            items.append(template.format(title=title, sentence=s.text))
        return items

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        ranked = rank_by_score(scores)
        sizes = candidate_sizes(len(ranked), self.params.step, self.params.max_sentences)
        info: dict[str, Any] = {"mode": self.params.mode, "candidate_sizes": sizes}
        if not sizes:
            return Selection([], {**info, "judge_calls": 0, "sets_judged": 0, "chosen_k": 0,
                                  "evidential": False, "probabilities": [], "judge_seconds": 0.0})
        items = self.evidence_items(example, sentences, ranked[: sizes[-1]])
        sets = [items[:k] for k in sizes]
        t = time.perf_counter()
        if self.params.mode == "batched":
            probs = self.judge.probabilities(example.question, sets)
            calls = 1
            chosen = next((j for j, p in enumerate(probs) if self.judge.is_evidential(p)), None)
        else:
            probs, calls, chosen = [], 0, None
            for j, evidence in enumerate(sets):
                probs.extend(self.judge.probabilities(example.question, [evidence]))
                calls += 1
                if self.judge.is_evidential(probs[-1]):
                    chosen = j
                    break
        seconds = time.perf_counter() - t
        evidential = chosen is not None
        k = sizes[chosen] if chosen is not None else sizes[-1]
        info.update(
            judge_calls=calls, sets_judged=len(probs), chosen_k=k, evidential=evidential,
            probabilities=[float(p) for p in probs], judge_seconds=seconds,
        )
        return Selection(ranked[:k], info)
