"""ragsift's built-in trainers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_trainers(register: Register) -> None:
    from ragsift.trainers.bridge_documents import BridgeDocumentTrainer
    from ragsift.trainers.cross_encoder import CrossEncoderTrainer
    from ragsift.trainers.dual_encoder import DualEncoderTrainer
    from ragsift.trainers.fusion import FusionTrainer
    from ragsift.trainers.judge_readout import JudgeReadoutTrainer
    from ragsift.trainers.yes_no_lora import YesNoLoraTrainer
    from ragsift.trainers.yes_no_readout import YesNoReadoutTrainer

    register("bridge-documents", BridgeDocumentTrainer)
    register("cross-encoder", CrossEncoderTrainer)
    register("dual-encoder", DualEncoderTrainer)
    register("fusion", FusionTrainer)
    register("judge-readout", JudgeReadoutTrainer)
    register("yes-no-lora", YesNoLoraTrainer)
    register("yes-no-readout", YesNoReadoutTrainer)
