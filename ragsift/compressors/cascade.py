"""A two-stage compressor: a cheap coarse stage decides what survives, a fine stage selects inside
the survivors, so that an expensive scorer reads only what the cheap one kept.

::

    splitter -> scorer -> selector            (coarse: every sentence scored; the survivors kept)
             -> fine_scorer -> fine_selector  (fine: only the survivors' sentences scored and selected)
             -> assembler

The coarse selector is any selector: ``top-documents`` keeps whole documents (the best ``k``, or
those above a threshold, by the max / mean / top-m mean of their sentences' scores), ``threshold``
or ``top-k`` keep sentences. The fine stage scores the survivors' sentences, in original order,
with ``fine_scorer`` (left out: the coarse scores of the survivors) and selects among them with
``fine_selector`` (left out: the survivors are kept whole, in the coarse selector's order). A fine
scorer sees the whole example (every document's text, for a scorer that reads a sentence's
document) but scores only the survivors' sentences. When the coarse stage keeps everything
(``selector = "all"``) the cascade is the single-stage pipeline ``splitter -> fine_scorer ->
fine_selector -> assembler``.

``keep_whole = W`` keeps the coarse stage's first ``W`` documents (in the order of the coarse
selector's kept list, best first under ``top-documents``) whole, past the fine stage, which then
scores and selects only inside the other survivors: "the 3 best documents whole, and the best
sentence of each of the next 2" is a coarse ``top-documents`` with ``k = 5``, ``keep_whole = 3``
and a fine ``top-k`` with ``k = 1, per_document = true``. The kept list is the whole documents'
sentences first, then the fine selection's.

The record's ``scores`` are the final stage's: the fine scores of the survivors, and NaN (None in
predictions) for the sentences the fine scorer never saw; ``info["coarse"]`` holds the coarse
stage (survivors, the coarse selector's info and, with a fine scorer, the coarse scores).
``timings["score"]`` and ``["select"]`` add both stages. A sweep may vary ``selector``,
``fine_selector`` and ``assembler`` params: the coarse scores are computed once per example, the
fine scores once per set of survivors (the score cache's key names the sentences scored).
"""

from __future__ import annotations

import time
from typing import Any, Self

import numpy as np
from pydantic import NonNegativeInt, model_validator

from ragsift.compressors.pipeline import PipelineCompressor, PipelineParams
from ragsift.plugin import PluginSpec
from ragsift.scorers.base import Scorer
from ragsift.selectors.base import Selector
from ragsift.types import CompressionResult, Example

__all__ = ["CascadeCompressor", "CascadeParams"]


class CascadeParams(PipelineParams):
    """The pipeline's four stages (``scorer`` and ``selector`` are the coarse stage), plus the fine
    stage; each a plugin name or a table with ``name`` and the plugin's params."""

    #: scores the survivors' sentences (left out: the coarse scores are used)
    fine_scorer: PluginSpec | None = None
    #: selects among the survivors' sentences (left out: the survivors are kept whole)
    fine_selector: PluginSpec | None = None
    #: the coarse stage's first this many documents are kept whole, past the fine stage
    keep_whole: NonNegativeInt = 0

    @model_validator(mode="after")
    def _whole_needs_fine(self) -> Self:
        if self.keep_whole and self.fine_selector is None:
            raise ValueError(f"keep_whole = {self.keep_whole} needs a fine_selector to select inside the other "
                             "survivors; without one every survivor is kept whole anyway")
        return self


class CascadeCompressor(PipelineCompressor):
    """Coarse (scorer + selector) then fine (fine_scorer + fine_selector) inside the survivors."""

    Params = CascadeParams
    default_stages = {"splitter": {"name": "presplit", "fallback": "sentencizer"},
                      "assembler": {"name": "original-order"}}
    stage_kinds = {"splitter": "splitter", "scorer": "scorer", "selector": "selector", "fine_scorer": "scorer",
                   "fine_selector": "selector", "assembler": "assembler"}
    optional_stages = frozenset({"fine_scorer", "fine_selector"})
    scoring_stages = ("scorer", "fine_scorer")
    swept_stages = ("selector", "fine_selector", "assembler")
    conformance_params = {
        "splitter": {"name": "regex"},
        "scorer": {"name": "bm25"},
        "selector": {"name": "top-documents", "k": 2},
        "fine_scorer": {"name": "bm25", "k1": 1.2},
        "fine_selector": {"name": "top-k", "k": 2},
    }
    fine_scorer: Scorer | None
    fine_selector: Selector | None

    def range_checks(self) -> list[tuple[str, str]]:
        checks = [("selector", "scorer")]
        if self.fine_selector is not None:  # its scores: the fine scorer's, else the coarse ones
            checks.append(("fine_selector", "fine_scorer" if self.fine_scorer is not None else "scorer"))
        return checks

    def compress(self, example: Example) -> CompressionResult:
        sentences, coarse_scores, timings, info = self._split_and_score(example)
        t = time.perf_counter()
        coarse = self.selector.select(example, sentences, coarse_scores)
        timings["select"] = time.perf_counter() - t
        coarse_kept = self._check_kept(coarse, len(sentences), example.id, "selector")
        in_order = sorted(coarse_kept, key=lambda i: (sentences[i].doc_index, sentences[i].index))
        whole_docs = list(dict.fromkeys(sentences[i].doc_index for i in coarse_kept))[: self.params.keep_whole]
        whole = [i for d in whole_docs for i in in_order if sentences[i].doc_index == d]
        survivors = [i for i in in_order if sentences[i].doc_index not in whole_docs]
        inside = [sentences[i] for i in survivors]

        if self.fine_scorer is not None:
            fine_scores = self._score("fine_scorer", example, inside, timings, info)
        else:
            fine_scores = coarse_scores[survivors] if survivors else np.zeros(0)
        fine_info: dict[str, Any] = {}
        if self.fine_selector is not None:
            t = time.perf_counter()
            fine = self.fine_selector.select(example, inside, fine_scores)
            timings["select"] += time.perf_counter() - t
            kept = whole + [survivors[j] for j in self._check_kept(fine, len(inside), example.id, "fine_selector")]
            fine_info = fine.info
        else:
            kept = coarse_kept

        t = time.perf_counter()
        text = self.assembler.assemble(example.documents, sentences, kept)
        timings["assemble"] = time.perf_counter() - t

        scores = coarse_scores
        record: dict[str, Any] = {"survivors": len(survivors), **coarse.info}
        if whole:
            record["whole_sentences"] = len(whole)
        if self.fine_scorer is not None:
            scores = np.full(len(sentences), np.nan)
            scores[survivors] = fine_scores
            record["scores"] = [float(s) for s in coarse_scores]
        return CompressionResult(
            example_id=example.id,
            sentences=sentences,
            scores=[float(s) for s in scores],
            kept=kept,
            text=text,
            timings=timings,
            info={**info, "coarse": record, **fine_info},
        )

