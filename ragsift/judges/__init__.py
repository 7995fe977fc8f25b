"""ragsift's built-in judges (ECoRAG's evaluators), registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_judges(register: Register) -> None:
    from ragsift.judges.causal import CausalJudge
    from ragsift.judges.seq2seq import Seq2SeqJudge

    register("causal", CausalJudge)
    register("seq2seq", Seq2SeqJudge)
