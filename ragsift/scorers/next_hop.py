"""The next hop named by a language model, for the two-hop document ranker.

Given the question and the first document the ranker keeps, a reader (any ``reader`` plugin: a
llama.cpp model in-process, a server, ...) is asked to name the subject of the document the
answer still needs (IRCoT / self-ask's "what to look up next", one short generation). Each other
document's *leading entity* (:func:`ragsift.scorers.bridge_features.leading_entity`: its title, or
without a title the name its text opens with) is then matched against that name by the Jaccard
overlap of their normalised words, a number in ``[0, 1]`` that the ranker mixes into the
probability of its later picks (:class:`ragsift.scorers.bridge_documents.BridgeDocumentScorer`,
``next_hop`` and ``next_hop_weight``).

The default prompt (the reader spec's own ``system_template`` / ``user_template`` replace it)
was written for Qwen2.5-Coder-1.5B-Instruct and looked at on the development pool only
(docs/document-ranking.md, "The next hop named by the reader model").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragsift.metrics.normalize import normalize_answer
from ragsift.registry import build_plugin
from ragsift.types import Document

__all__ = ["NextHopNamer", "name_match", "NEXT_HOP_SYSTEM", "NEXT_HOP_USER"]

NEXT_HOP_SYSTEM = "You help answer multi-hop questions."
NEXT_HOP_USER = ("Question: {query}\n\nDocument: {context}\n\nThe answer may need a second document. Name the person, "
                 "place, work or thing that the second document would be about. Reply with the name only.")
#: what the namer's reader gets unless its spec says otherwise: the prompt above, one short line
DEFAULTS: dict[str, Any] = {"system_template": NEXT_HOP_SYSTEM, "user_template": NEXT_HOP_USER,
                            "max_new_tokens": 16, "stop": ["\n"]}


def name_match(name: str, leads: Sequence[str]) -> np.ndarray:
    """Per leading entity (already normalised, ``""`` for none): the Jaccard overlap of its words
    with ``name``'s normalised words (0 for an empty name or lead)."""
    named = set(normalize_answer(name).split())
    out = np.zeros(len(leads))
    for j, lead in enumerate(leads):
        words = set(lead.split())
        if named and words:
            out[j] = len(named & words) / len(named | words)
    return out


class NextHopNamer:
    """A reader that names the next document's subject from the question and one kept document."""

    def __init__(self, spec: Mapping[str, Any], owner: str) -> None:
        self.reader = build_plugin("reader", {**DEFAULTS, **spec}, f"{owner} next_hop")

    def warm_up(self) -> None:
        self.reader.warm_up()

    def name(self, question: str, document: Document) -> str:
        context = f"{document.title}: {document.text}" if document.title.strip() else document.text
        return str(self.reader.answer(question, context).text).strip()
