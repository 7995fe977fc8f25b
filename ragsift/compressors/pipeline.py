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
from ragsift.disk_cache import JsonStore
from ragsift.errors import ConfigError, PluginContractError
from ragsift.plugin import Params, PluginSpec, merge_spec
from ragsift.registry import build_plugin
from ragsift.scorers.base import Scorer
from ragsift.scorers.caching import CachingScorer
from ragsift.selectors.base import Selector
from ragsift.splitters.base import Splitter
from ragsift.types import CompressionResult, Example, Selection

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
    conformance_params = {
        "splitter": {"name": "regex"},
        "scorer": {"name": "bm25"},
        "selector": {"name": "all"},
        "assembler": {"name": "original-order"},
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        owner = type(self).__name__
        built = {}
        for stage in STAGE_ORDER:
            default, override = self.default_stages.get(stage), getattr(self.params, stage)
            if not merge_spec(default, override).get("name"):
                raise ConfigError(f"{owner}: stage '{stage}' needs a plugin: add [compressor.{stage}] with a 'name'.")
            built[stage] = build_plugin(stage, override, f"{owner} {stage}", default=default)
        self.splitter: Splitter = built["splitter"]
        self.scorer: Scorer = built["scorer"]
        self.selector: Selector = built["selector"]
        self.assembler: Assembler = built["assembler"]
        try:
            self.selector.check_score_range(self.scorer.score_range(), str(self.scorer.registered_name))
        except ConfigError as exc:
            raise ConfigError(f"{owner} selector: {exc}") from None

    @property
    def stages(self) -> dict[str, Any]:
        return {"splitter": self.splitter, "scorer": self.scorer, "selector": self.selector, "assembler": self.assembler}

    @property
    def deterministic(self) -> bool:  # type: ignore[override]
        """Deterministic when every stage is."""
        return all(type(plugin).deterministic for plugin in self.stages.values())

    def config(self) -> dict[str, Any]:
        return {stage: {"name": plugin.registered_name, **plugin.config()} for stage, plugin in self.stages.items()}

    def warm_up(self) -> None:
        for plugin in self.stages.values():
            plugin.warm_up()

    def _who(self, stage: str) -> str:
        """``scorer 'bm25' (BM25Scorer)``: the plugin of a stage, for contract errors."""
        plugin = self.stages[stage]
        plugin = getattr(plugin, "inner", plugin)  # a caching wrapper: name the scorer it wraps
        return f"{stage} '{plugin.registered_name}' ({type(plugin).__qualname__})"

    def _check_kept(self, selection: Any, n: int, example_id: str) -> list[int]:
        kept = getattr(selection, "kept", None)
        if not isinstance(selection, Selection) or not isinstance(kept, (list, tuple, np.ndarray)):
            raise PluginContractError(f"{self._who('selector')} returned {type(selection).__name__}; a selector "
                                      "returns a Selection whose 'kept' lists sentence indices.")
        if any(isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) for i in kept):
            raise PluginContractError(f"{self._who('selector')} returned kept = {list(kept)[:10]!r} for example "
                                      f"'{example_id}'; 'kept' must hold integer sentence indices.")
        out = [int(i) for i in kept]
        if len(set(out)) != len(out) or any(not 0 <= i < n for i in out):
            raise PluginContractError(f"{self._who('selector')} returned invalid indices {out[:20]} for {n} sentences "
                                      f"of example '{example_id}'; indices must be distinct and in [0, {n}).")
        return out

    def cache_scores(self, store: JsonStore | CachingScorer) -> CachingScorer:
        """Score through a cache: a store (keyed as :mod:`ragsift.scorers.caching` says), or
        another pipeline's caching scorer to share (a sweep's grid points share one scorer and
        splitter, so the model loads and scores once). Returns the caching scorer in use."""
        if isinstance(store, CachingScorer):
            if store.splitter != {"name": self.splitter.registered_name, **self.splitter.config()}:
                raise ValueError("a shared caching scorer must come from a pipeline with the same splitter")
            self.scorer = store
            return store
        if not isinstance(self.scorer, CachingScorer):
            splitter = {"name": self.splitter.registered_name, **self.splitter.config()}
            self.scorer = CachingScorer(self.scorer, store, splitter=splitter)
        return self.scorer

    def compress(self, example: Example) -> CompressionResult:
        check_example(example, type(self).__name__)
        # Stage timings need no explicit CUDA synchronisation: every stage hands back host values
        # (numpy scores, Python indices, a string), which waits for the device work it queued.
        timings: dict[str, float] = {}
        t = time.perf_counter()
        sentences = self.splitter.split_all(example.documents)
        timings["split"] = time.perf_counter() - t

        t = time.perf_counter()
        scores = np.asarray(self.scorer.score(example, sentences), dtype=np.float64) if sentences else np.zeros(0)
        timings["score"] = time.perf_counter() - t
        info: dict[str, Any] = {}
        call = self.scorer.last_call if isinstance(self.scorer, CachingScorer) and sentences else None
        if call is not None:
            # the scorer's own time, measured now (a miss) or when the scores were computed (a hit),
            # without the cache's hashing and file access; the record says which
            info["score_cache"] = {"hit": call.cached, "seconds": call.seconds, "measured_seconds": timings["score"]}
            timings["score"] = call.seconds
        if scores.shape != (len(sentences),):
            raise PluginContractError(f"{self._who('scorer')} returned scores of shape {scores.shape} for "
                                      f"{len(sentences)} sentences of example '{example.id}'; a scorer returns one "
                                      "score per sentence.")

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
