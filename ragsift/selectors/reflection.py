"""ECoRAG's reflection: grow the evidence in rank order until a judge says it suffices.

Sentences are ranked by score (descending, ties in original order). Candidate sets are the top
k for k = step, 2*step, ... below ``max_sentences``, then k = ``max_sentences`` (or all
sentences, when there are fewer). The selector keeps the first candidate set the judge (the
paper's "evaluator", a plugin of the ``judge`` stage) finds evidential, or the largest set when
none is. Paper defaults: step 4, max 20 (at most 5 judge calls).

Two modes select exactly the same sentences:

- ``sequential``: the paper's loop, one judge call per set, stopping at the first evidential
  set (fewest judge inputs);
- ``batched``: every candidate set judged in one batched judge call (one model call; more
  inputs, but parallel on an accelerator).

Documented assumptions: each sentence is shown to the judge as ``evidence_template``
(default ``"{title}: {sentence}"``, like the ``rank-order`` assembler's output) in rank order;
the largest set is judged too (as in the paper), although the selection does not depend on it,
so ``Selection.info["evidential"]`` says whether the kept set was judged sufficient.

The judge's table was called ``evaluator`` before ragsift 0.2; that key is still accepted (with a
DeprecationWarning) for one release.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ragsift.plugin import Params
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
    #: the judge: a plugin spec table (``name`` + params); without ``name``, the params
    #: override the default judge's
    judge: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_JUDGE))
    step: int = Field(default=4, ge=1)
    max_sentences: int = Field(default=20, ge=1)
    mode: Literal["sequential", "batched"] = "sequential"
    evidence_template: str = "{title}: {sentence}"

    @model_validator(mode="before")
    @classmethod
    def _old_judge_key(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "evaluator" in data:
            if "judge" in data:
                raise ValueError("give 'judge' or its old name 'evaluator', not both")
            warnings.warn("ReflectionSelector: the 'evaluator' table is now called 'judge'; the old key is "
                          "accepted until ragsift 0.3.", DeprecationWarning, stacklevel=2)
            data = {("judge" if k == "evaluator" else k): v for k, v in data.items()}
        return data

    @field_validator("judge", mode="before")
    @classmethod
    def _judge_table(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError("must be a table naming a judge, e.g. {name = \"seq2seq\", model = \"...\"}")
        value = dict(value)
        if "name" not in value:
            value = {**DEFAULT_JUDGE, **value}
        return value

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
        from ragsift.config import build_plugin

        self.judge = build_plugin("judge", self.params.judge, "ReflectionSelector judge")

    def config(self) -> dict[str, Any]:
        out = super().config()
        out["judge"] = {"name": self.params.judge["name"], **self.judge.config()}
        return out

    def warm_up(self) -> None:
        self.judge.warm_up()

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
