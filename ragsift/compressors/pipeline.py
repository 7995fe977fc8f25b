"""A compressor composed of four stages: splitter -> scorer -> selector -> assembler.

Named compressors (``exit``, ``ecorag``, the baselines) are this composition with default
stages; a config may override any stage's params, or swap a stage for another plugin by name.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from ragsift.assemblers.base import Assembler
from ragsift.compressors.base import Compressor, check_example
from ragsift.errors import ConfigError, PluginContractError
from ragsift.plugin import Params, PluginSpec, merge_spec, warm_up_all
from ragsift.registry import build_plugin
from ragsift.scorers.base import Scorer
from ragsift.selectors.base import Selector
from ragsift.splitters.base import Splitter
from ragsift.types import CompressionResult, Example, Selection, Sentence

__all__ = ["PipelineCompressor", "PipelineParams", "STAGE_ORDER"]

STAGE_ORDER = ("splitter", "scorer", "selector", "assembler")


class PipelineParams(Params):
    """Each stage: a plugin name, or a table with ``name`` and that plugin's params; a table
    without ``name`` (or with the default's name) overrides the compressor's default stage."""

    splitter: PluginSpec | None = None
    scorer: PluginSpec | None = None
    selector: PluginSpec | None = None
    assembler: PluginSpec | None = None


class PipelineCompressor(Compressor):
    """splitter -> scorer -> selector -> assembler, each a plugin chosen by name."""

    Params = PipelineParams
    #: default stage specs of a named compressor: stage -> {"name": ..., **params}
    default_stages: ClassVar[dict[str, dict[str, Any]]] = {}
    #: the stages of the composition, in order: params field -> the registry stage of its plugin
    stage_kinds: ClassVar[dict[str, str]] = {stage: stage for stage in STAGE_ORDER}
    #: stages a config may leave out (no plugin named: the stage is skipped; see the subclass)
    optional_stages: ClassVar[frozenset[str]] = frozenset()
    #: the stages whose plugins score sentences (each scores through the run's score cache)
    scoring_stages: ClassVar[tuple[str, ...]] = ("scorer",)
    #: the stages a sweep may vary (:mod:`ragsift.evaluation.run.sweep`): those after every scorer
    #: that sees all sentences, so that every point reuses those scores
    swept_stages: ClassVar[tuple[str, ...]] = ("selector", "assembler")
    conformance_params = {
        "splitter": {"name": "regex"},
        "scorer": {"name": "bm25"},
        "selector": {"name": "all"},
        "assembler": {"name": "original-order"},
    }
    splitter: Splitter
    scorer: Scorer
    selector: Selector
    assembler: Assembler

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        owner = type(self).__name__
        for stage, kind in self.stage_kinds.items():
            default, override = self.default_stages.get(stage), getattr(self.params, stage)
            if not merge_spec(default, override).get("name"):
                if stage in self.optional_stages:
                    setattr(self, stage, None)
                    continue
                raise ConfigError(f"{owner}: stage '{stage}' needs a plugin: add [compressor.{stage}] with a 'name'.")
            setattr(self, stage, build_plugin(kind, override, f"{owner} {stage}", default=default))
        for selector_stage, scorer_stage in self.range_checks():
            selector, scorer = getattr(self, selector_stage), getattr(self, scorer_stage)
            try:
                selector.check_score_range(scorer.score_range(), str(scorer.registered_name))
            except ConfigError as exc:
                raise ConfigError(f"{owner} {selector_stage}: {exc}") from None

    def range_checks(self) -> list[tuple[str, str]]:
        """(selector stage, scorer stage) pairs whose settings and score range must fit."""
        return [("selector", "scorer")]

    @property
    def stages(self) -> dict[str, Any]:
        """Stage -> its plugin (a stage left out is not listed)."""
        return {stage: getattr(self, stage) for stage in self.stage_kinds if getattr(self, stage) is not None}

    @property
    def deterministic(self) -> bool:  # type: ignore[override]
        """Deterministic when every stage is."""
        return all(type(plugin).deterministic for plugin in self.stages.values())

    def config(self) -> dict[str, Any]:
        """Every stage's spec, and any other param of the composition that differs from its default
        (a frozen or recorded config rebuilds the same compressor)."""
        defaults = type(self.params)()
        extra = {k: v for k, v in self.params.model_dump().items()
                 if k not in self.stage_kinds and v != getattr(defaults, k)}
        return {**{stage: {"name": plugin.registered_name, **plugin.config()} for stage, plugin in self.stages.items()},
                **extra}

    def warm_up(self) -> None:
        # every stage and every plugin a stage holds (presplit's fallback, a judge, inner scorers)
        for plugin in self.stages.values():
            warm_up_all(plugin)

    def _who(self, stage: str) -> str:
        """``scorer 'bm25' (BM25Scorer)``: the plugin of a stage, for contract errors."""
        plugin = self.stages[stage]
        plugin = getattr(plugin, "inner", plugin)  # a caching wrapper: name the scorer it wraps
        return f"{stage} '{plugin.registered_name}' ({type(plugin).__qualname__})"

    def _check_kept(self, selection: Any, n: int, example_id: str, stage: str = "selector") -> list[int]:
        kept = getattr(selection, "kept", None)
        if not isinstance(selection, Selection) or not isinstance(kept, (list, tuple, np.ndarray)):
            raise PluginContractError(f"{self._who(stage)} returned {type(selection).__name__}; a selector "
                                      "returns a Selection whose 'kept' lists sentence indices.")
        if any(isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) for i in kept):
            raise PluginContractError(f"{self._who(stage)} returned kept = {list(kept)[:10]!r} for example "
                                      f"'{example_id}'; 'kept' must hold integer sentence indices.")
        out = [int(i) for i in kept]
        if len(set(out)) != len(out) or any(not 0 <= i < n for i in out):
            raise PluginContractError(f"{self._who(stage)} returned invalid indices {out[:20]} for {n} sentences "
                                      f"of example '{example_id}'; indices must be distinct and in [0, {n}).")
        return out

    def splitter_spec(self) -> dict[str, Any]:
        """The splitter's spec (``{"name": ..., **params}``): what decides the sentences a scorer sees."""
        return {"name": self.splitter.registered_name, **self.splitter.config()}

    def scorers(self) -> dict[str, Scorer]:
        """Scoring stage -> its plugin, for the :attr:`scoring_stages` the compressor has."""
        return {stage: plugin for stage in self.scoring_stages if (plugin := getattr(self, stage)) is not None}

    def replace_scorer(self, stage: str, scorer: Scorer) -> None:
        """Score ``stage`` with ``scorer`` from now on: a wrapper of its plugin (the evaluation
        wraps each scorer with its score cache, :func:`ragsift.evaluation.run.caches.cache_scores`)."""
        if stage not in self.scorers():
            raise ValueError(f"{type(self).__name__} has no scoring stage {stage!r}; it has {sorted(self.scorers())}")
        setattr(self, stage, scorer)

    def _score(self, stage: str, example: Example, sentences: list[Sentence],
               timings: dict[str, float], info: dict[str, Any]) -> np.ndarray:
        """The scores of ``sentences`` by the scorer of ``stage``, its seconds added to
        ``timings["score"]`` (a cache hit: the seconds measured when the scores were computed; the
        calls of a run are summed in ``info["score_cache"]``)."""
        scorer = getattr(self, stage)
        t = time.perf_counter()
        scores = np.asarray(scorer.score(example, sentences), dtype=np.float64) if sentences else np.zeros(0)
        seconds = time.perf_counter() - t
        # a scorer that reports how it answered the call (the score cache, ragsift.scorers.caching)
        call = getattr(scorer, "last_call", None) if sentences else None
        if call is not None:
            # the scorer's own time, measured now (a miss) or when the scores were computed (a hit),
            # without the cache's hashing and file access; the record says which
            before = info.get("score_cache")
            record = {"hit": call.cached, "seconds": call.seconds, "measured_seconds": seconds}
            if before is not None:
                record = {"hit": before["hit"] and call.cached, "seconds": before["seconds"] + call.seconds,
                          "measured_seconds": before["measured_seconds"] + seconds}
            info["score_cache"] = record
            seconds = call.seconds
        timings["score"] = timings.get("score", 0.0) + seconds
        if scores.shape != (len(sentences),):
            raise PluginContractError(f"{self._who(stage)} returned scores of shape {scores.shape} for "
                                      f"{len(sentences)} sentences of example '{example.id}'; a scorer returns one "
                                      "score per sentence.")
        self._check_finite(stage, example, scores)
        return scores

    def _check_finite(self, stage: str, example: Example, scores: np.ndarray) -> None:
        """Refuse a NaN, and an infinity outside the scorer's declared :meth:`score_range`.

        Refused rather than ranked last with a warning: a NaN is not a low score but no score (0/0,
        an overflow, a server's broken answer), so there is no right place for it in a ranking, and
        putting it last would change what is kept while the run still reads as the compressor's
        result (and its records say ``score: null``). As scikit-learn refuses NaN input instead of
        guessing, a scorer that returns one breaks its contract and is named, like a wrong shape.
        An infinity is an ordered value and legal where the scorer declares it (a log-probability
        of ``-inf``: ``question-likelihood``); anywhere else it is an overflow and refused too."""
        bad = ~np.isfinite(scores)
        if not bad.any():
            return
        declared = getattr(self, stage).score_range()
        low, high = declared if declared is not None else (0.0, 0.0)  # None: finite, unbounded
        allowed = ((scores == -np.inf) & (low == -np.inf)) | ((scores == np.inf) & (high == np.inf))
        bad &= ~allowed
        if bad.any():
            where = np.flatnonzero(bad)
            values = ", ".join(f"sentence {i}: {scores[i]}" for i in where[:5])
            more = f" (and {len(where) - 5} more)" if len(where) > 5 else ""
            in_range = "" if declared is None else f" in its declared range [{low}, {high}]"
            raise PluginContractError(f"{self._who(stage)} returned {len(where)} non-finite score(s) for example "
                                      f"'{example.id}': {values}{more}; a scorer returns a number for every "
                                      f"sentence{in_range}, so these cannot be ranked. Fix the scorer or its "
                                      "input (an empty sentence, a failed server call).")

    def _split_and_score(self, example: Example) -> tuple[list[Sentence], np.ndarray, dict[str, float], dict[str, Any]]:
        """The example checked, split and scored by the ``scorer`` stage: (sentences, scores,
        timings, info)."""
        check_example(example, type(self).__name__)
        # Stage timings need no explicit CUDA synchronisation: every stage hands back host values
        # (numpy scores, Python indices, a string), which waits for the device work it queued.
        timings: dict[str, float] = {}
        t = time.perf_counter()
        sentences = self.splitter.split_all(example.documents)
        timings["split"] = time.perf_counter() - t
        info: dict[str, Any] = {}
        return sentences, self._score("scorer", example, sentences, timings, info), timings, info

    def compress(self, example: Example) -> CompressionResult:
        sentences, scores, timings, info = self._split_and_score(example)

        t = time.perf_counter()
        selection = self.selector.select(example, sentences, scores)
        timings["select"] = time.perf_counter() - t
        kept = self._check_kept(selection, len(sentences), example.id)

        t = time.perf_counter()
        text = self.assembler.assemble(example.documents, sentences, kept)
        timings["assemble"] = time.perf_counter() - t

        return CompressionResult(
            example_id=example.id,
            sentences=sentences,
            scores=[float(s) for s in scores],
            kept=kept,
            text=text,
            timings=timings,
            info={**info, **selection.info},
        )
