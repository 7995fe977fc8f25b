"""ragsift's built-in trainers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_trainers(register: Register) -> None:
    from ragsift.trainers.cross_encoder import CrossEncoderTrainer
    from ragsift.trainers.fusion import FusionTrainer
    from ragsift.trainers.yes_no_lora import YesNoLoraTrainer
    from ragsift.trainers.yes_no_readout import YesNoReadoutTrainer

    register("cross-encoder", CrossEncoderTrainer)
    register("fusion", FusionTrainer)
    register("yes-no-lora", YesNoLoraTrainer)
    register("yes-no-readout", YesNoReadoutTrainer)
