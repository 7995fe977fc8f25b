"""EXIT (Hwang et al., ACL 2025): context-aware extractive compression.

Split each retrieved document into sentences (spaCy's rule-based sentencizer), score every
sentence with a causal LM that reads the query, the sentence and the sentence's own document
(gemma-2b-it + the LoRA adapter ``doubleyyh/exit-gemma-2b``; normalised P("Yes")), keep the
sentences whose score is >= 0.5, and reassemble them in original order: kept sentences of one
document joined by a space, documents separated by a blank line. Keeping nothing is a valid
outcome, reported as an empty compression (``CompressionResult.is_empty``).

``configs/exit.toml`` is the paper's setup (4-bit NF4 on CUDA, fp16 compute);
``configs/exit-offline.toml`` runs zero-shot with the offline SmolLM2-135M-Instruct.
"""

from __future__ import annotations

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.scorers.causal_yes_no import EXIT_ADAPTER, EXIT_MODEL

__all__ = ["ExitCompressor"]


class ExitCompressor(PipelineCompressor):
    """sentencizer -> causal-yes-no (EXIT's classifier) -> threshold 0.5 (>=) -> original order."""

    default_stages = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "causal-yes-no", "model": EXIT_MODEL, "adapter": EXIT_ADAPTER},
        "selector": {"name": "threshold", "threshold": 0.5},
        "assembler": {"name": "original-order", "title": False, "sentence_separator": " ", "document_separator": "\n\n"},
    }
