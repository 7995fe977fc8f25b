"""ragsift's built-in trainers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_trainers(register: Register) -> None:
    from ragsift.trainers.cross_encoder import CrossEncoderTrainer
    from ragsift.trainers.fusion import FusionTrainer

    register("cross-encoder", CrossEncoderTrainer)
    register("fusion", FusionTrainer)
