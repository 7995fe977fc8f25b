"""A training job killed mid-run, for the trainers' ``--resume`` tests: :class:`InterruptedJob`'s
progress bar named ``stop_bar`` raises :class:`Interrupted` after ``stop_after`` updates, as a
run killed at that point would stop (checkpoints written so far stay on disk)."""

from __future__ import annotations

from dataclasses import dataclass

from ragsift.trainers.base import TrainingJob

__all__ = ["Interrupted", "InterruptedJob", "StoppingBar"]


class Interrupted(Exception):
    """Raised by the interrupted progress bar: the simulated kill."""


class StoppingBar:
    """A silent stand-in for tqdm that raises :class:`Interrupted` after ``stop_after`` updates
    (never, for None)."""

    def __init__(self, stop_after: int | None) -> None:
        self.updates, self.stop_after = 0, stop_after

    def __enter__(self) -> StoppingBar:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def update(self, n: int) -> None:
        self.updates += n
        if self.stop_after is not None and self.updates >= self.stop_after:
            raise Interrupted

    def set_postfix(self, *args: object, **kwargs: object) -> None:
        pass


@dataclass
class InterruptedJob(TrainingJob):
    #: the progress bar (its ``desc``, e.g. the trainer's name or ``features``) that stops the run
    stop_bar: str = ""
    stop_after: int | None = None

    def progress_bar(self, total: int, desc: str, initial: int = 0) -> StoppingBar:
        return StoppingBar(self.stop_after if desc == self.stop_bar else None)
