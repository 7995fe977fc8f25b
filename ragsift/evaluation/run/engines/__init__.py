"""The engines of ``--engine`` behind one interface, :class:`Engine`: :mod:`.local` (this process)
and :mod:`.ray` (Ray Data); a new one is a class with its two methods, named in :func:`get_engine`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ragsift.errors import ConfigError
from ragsift.evaluation.run.plan import RunPlan

__all__ = ["Engine", "get_engine"]


class Engine(Protocol):
    """How a run's examples are compressed, read and recorded (``--engine``): the local engine
    (:mod:`ragsift.evaluation.run.engines.local`) or Ray (:mod:`ragsift.evaluation.run.engines.ray`)."""

    def check(self, plan: RunPlan) -> None:
        """Refuse the plan before anything is written (a missing package, say)."""

    def run(self, plan: RunPlan, run_dir: Path, paths: Mapping[str, Path]) -> dict[str, Any]:
        """Write the records of every example of ``plan`` not yet in ``paths``; returns what the
        manifest records about the run's caches and the engine."""
        ...


def get_engine(name: str) -> Engine:
    """The engine of ``--engine NAME``."""
    if name == "local":
        from ragsift.evaluation.run.engines.local import LocalEngine

        return LocalEngine()
    if name == "ray":
        from ragsift.evaluation.run.engines.ray import RayEngine

        return RayEngine()
    raise ConfigError(f"--engine: expected 'local' or 'ray'; got '{name}'.")
