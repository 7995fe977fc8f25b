"""ragsift's built-in splitters, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_splitters(register: Register) -> None:
    from ragsift.splitters.nltk_punkt import NltkPunktSplitter
    from ragsift.splitters.presplit import PresplitSplitter
    from ragsift.splitters.regex import RegexSplitter
    from ragsift.splitters.sentencizer import SentencizerSplitter
    from ragsift.splitters.spacy_pipeline import SpacyPipelineSplitter

    register("sentencizer", SentencizerSplitter)
    register("spacy", SpacyPipelineSplitter)
    register("nltk-punkt", NltkPunktSplitter)
    register("regex", RegexSplitter)
    register("presplit", PresplitSplitter)
