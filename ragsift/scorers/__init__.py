"""ragsift's built-in scorers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_scorers(register: Register) -> None:
    from ragsift.scorers.bm25 import BM25Scorer
    from ragsift.scorers.bridge_documents import BridgeDocumentScorer
    from ragsift.scorers.causal_yes_no import CausalYesNoScorer
    from ragsift.scorers.cross_encoder import CrossEncoderScorer
    from ragsift.scorers.dual_encoder import DualEncoderScorer
    from ragsift.scorers.learned_fusion import LearnedFusionScorer
    from ragsift.scorers.oracle import OracleScorer
    from ragsift.scorers.provence import ProvenceScorer
    from ragsift.scorers.question_likelihood import QuestionLikelihoodScorer
    from ragsift.scorers.random import RandomScorer
    from ragsift.scorers.remote_yes_no import RemoteYesNoScorer
    from ragsift.scorers.self_information import SelfInformationScorer
    from ragsift.scorers.token_classifier import TokenClassifierScorer

    register("bm25", BM25Scorer)
    register("bridge-documents", BridgeDocumentScorer)
    register("causal-yes-no", CausalYesNoScorer)
    register("cross-encoder", CrossEncoderScorer)
    register("dual-encoder", DualEncoderScorer)
    register("learned-fusion", LearnedFusionScorer)
    register("oracle", OracleScorer)
    register("random", RandomScorer)
    register("remote-yes-no", RemoteYesNoScorer)
    register("self-information", SelfInformationScorer)
    register("question-likelihood", QuestionLikelihoodScorer)
    register("token-classifier", TokenClassifierScorer)
    register("provence", ProvenceScorer)
