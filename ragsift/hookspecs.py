"""Hook specifications: one registration hook per pipeline stage.

A plugin module implements any of these with ``@hookimpl`` and calls ``register(name, cls)``
with classes (not instances). ragsift's own plugins use exactly the same hooks as third-party
packages, which announce their module under the entry-point group ``ragsift``.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

__all__ = ["hookspec", "hookimpl", "Register", "PROJECT"]

PROJECT = "ragsift"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[str, type], None]


@hookspec
def register_splitters(register: Register) -> None:
    """Register sentence splitters."""


@hookspec
def register_scorers(register: Register) -> None:
    """Register sentence scorers."""


@hookspec
def register_selectors(register: Register) -> None:
    """Register sentence selectors."""


@hookspec
def register_assemblers(register: Register) -> None:
    """Register context assemblers."""


@hookspec
def register_compressors(register: Register) -> None:
    """Register compressors (compositions of the four stages)."""


@hookspec
def register_judges(register: Register) -> None:
    """Register evidence-sufficiency judges (the evaluators of ECoRAG's reflection)."""


@hookspec
def register_readers(register: Register) -> None:
    """Register readers (LLMs that answer from the compressed context)."""


@hookspec
def register_labelers(register: Register) -> None:
    """Register labelers (make training data for scorers)."""


@hookspec
def register_trainers(register: Register) -> None:
    """Register trainers (fit a scorer with 'ragsift train')."""


@hookspec
def register_datasets(register: Register) -> None:
    """Register dataset loaders."""


@hookspec
def register_metrics(register: Register) -> None:
    """Register evaluation metrics."""
