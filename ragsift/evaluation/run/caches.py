"""The caches of an evaluation run: per-sentence scores and reader answers, where
``[evaluation] cache`` says (``run``, ``shared``, a folder or ``off``: docs/evaluation.md). Keys and
safety: :mod:`ragsift.scorers.caching`, :mod:`ragsift.readers.caching`, :mod:`ragsift.disk_cache`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.disk_cache import JsonStore
from ragsift.errors import ConfigError
from ragsift.models import cache_dir
from ragsift.readers.caching import CachingReader
from ragsift.scorers.caching import CachingScorer

__all__ = ["RunCaches", "cache_root", "attach_caches", "cache_scores", "caching_scorers"]


def cache_root(setting: bool | str, run_dir: Path) -> Path | None:
    """The folder that holds ``scores/`` and ``answers/`` for an ``[evaluation] cache`` value
    (None: caching is off)."""
    if setting is False or setting == "off":
        return None
    if setting is True or setting == "run":
        return run_dir / "cache"
    if setting == "shared":
        return cache_dir()
    if isinstance(setting, str) and setting.strip():
        return Path(setting).expanduser()
    raise ConfigError(f"[evaluation] cache: expected 'run', 'shared', 'off', true, false or a folder; got {setting!r}.")


@dataclass
class RunCaches:
    """The caching wrappers of one run (empty when caching is off)."""

    root: Path | None
    #: compressor label -> its caching scorers (scoring stage -> scorer; a cascade has two)
    scorers: dict[str, dict[str, CachingScorer]] = field(default_factory=dict)
    reader: CachingReader | None = None

    def _distinct(self) -> list[CachingScorer]:
        return list(dict.fromkeys(s for stages in self.scorers.values() for s in stages.values()))

    @contextmanager
    def read_only(self) -> Iterator[None]:
        """Use cached values but store nothing new (untimed warm-up runs)."""
        with ExitStack() as stack:
            for scorer in self._distinct():
                stack.enter_context(scorer.read_only())
            if self.reader is not None:
                stack.enter_context(self.reader.read_only())
            yield

    def report(self) -> dict[str, Any]:
        """What the manifest records: where the caches are and how often they were hit."""
        scorers = self._distinct()
        return {
            "root": None if self.root is None else str(self.root),
            "scores": {"hits": sum(s.stats["hits"] for s in scorers), "misses": sum(s.stats["misses"] for s in scorers)},
            "answers": None if self.reader is None else dict(self.reader.stats),
        }


def caching_scorers(compressor: PipelineCompressor) -> dict[str, CachingScorer]:
    """Scoring stage -> its caching scorer, for the stages of ``compressor`` that score through a cache."""
    return {stage: plugin for stage, plugin in compressor.scorers().items() if isinstance(plugin, CachingScorer)}


def cache_scores(compressor: PipelineCompressor, store: JsonStore | CachingScorer | Mapping[str, CachingScorer]) -> CachingScorer:
    """Make ``compressor`` score through a cache: a store (keyed as :mod:`ragsift.scorers.caching`
    says), or another pipeline's caching scorer to share, or its :func:`caching_scorers` (a
    sweep's grid points share one scorer per scoring stage and one splitter, so each model loads
    and scores once). Returns the caching scorer of the ``scorer`` stage."""
    shared = {"scorer": store} if isinstance(store, CachingScorer) else store if isinstance(store, Mapping) else None
    for stage, scorer in compressor.scorers().items():
        if shared is not None:
            other = shared.get(stage)
            if other is None or other.splitter != compressor.splitter_spec():
                raise ValueError("a shared caching scorer must come from a pipeline with the same splitter "
                                 f"and a caching scorer for its stage '{stage}'")
            compressor.replace_scorer(stage, other)
        elif not isinstance(scorer, CachingScorer):
            assert isinstance(store, JsonStore)
            compressor.replace_scorer(stage, CachingScorer(scorer, store, splitter=compressor.splitter_spec()))
    return compressor.scorer  # type: ignore[return-value]


def attach_caches(compressors: Mapping[str, Any], reader: Any, setting: bool | str, run_dir: Path,
                  share: Mapping[str, str] | None = None) -> tuple[Any, RunCaches]:
    """Make every pipeline compressor score through the cache and the reader read through it;
    returns the reader to use and the caches. ``share`` maps a compressor label to the label whose
    caching scorer it uses (the points of one sweep: one scorer, one model load)."""
    root = cache_root(setting, run_dir)
    caches = RunCaches(root)
    if root is None:
        return reader, caches
    scores = JsonStore(root / "scores")
    share = dict(share or {})
    for label, compressor in compressors.items():
        if not isinstance(compressor, PipelineCompressor):
            continue
        cache_scores(compressor, caches.scorers.get(share.get(label, label), scores))
        caches.scorers[label] = caching_scorers(compressor)
    if reader is not None:
        caches.reader = CachingReader(reader, JsonStore(root / "answers"))
        reader = caches.reader
    return reader, caches
