"""ragsift's built-in compressors, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_compressors(register: Register) -> None:
    from ragsift.compressors.baselines import (
        BM25Compressor,
        EmbeddingCompressor,
        LLMLingua2Compressor,
        LongLLMLinguaCompressor,
        OracleCompressor,
        ProvenceCompressor,
        RandomCompressor,
        RecompExtractiveCompressor,
        SelectiveContextCompressor,
    )
    from ragsift.compressors.cascade import CascadeCompressor
    from ragsift.compressors.ecorag import EcoragCompressor
    from ragsift.compressors.exit import ExitCompressor
    from ragsift.compressors.none import NoCompression
    from ragsift.compressors.pipeline import PipelineCompressor

    register("pipeline", PipelineCompressor)
    register("cascade", CascadeCompressor)
    register("none", NoCompression)
    register("oracle", OracleCompressor)
    register("random", RandomCompressor)
    register("bm25", BM25Compressor)
    register("embedding", EmbeddingCompressor)
    register("exit", ExitCompressor)
    register("ecorag", EcoragCompressor)
    register("selective-context", SelectiveContextCompressor)
    register("longllmlingua", LongLLMLinguaCompressor)
    register("recomp-extractive", RecompExtractiveCompressor)
    register("llmlingua2", LLMLingua2Compressor)
    register("provence", ProvenceCompressor)
