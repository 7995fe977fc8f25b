"""ragsift's built-in evaluators, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_evaluators(register: Register) -> None:
    from ragsift.evaluators.causal import CausalEvaluator
    from ragsift.evaluators.seq2seq import Seq2SeqEvaluator

    register("causal", CausalEvaluator)
    register("seq2seq", Seq2SeqEvaluator)
