"""ragsift's built-in labelers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_labelers(register: Register) -> None:
    from ragsift.labelers.evidentiality import EvidentialityLabeler
    from ragsift.labelers.exit_pairs import ExitPairsLabeler
    from ragsift.labelers.gold_evidentiality import GoldEvidentialityLabeler
    from ragsift.labelers.paragraph_sentences import ParagraphSentencesLabeler

    register("evidentiality", EvidentialityLabeler)
    register("exit-pairs", ExitPairsLabeler)
    register("gold-evidentiality", GoldEvidentialityLabeler)
    register("paragraph-sentences", ParagraphSentencesLabeler)
