"""The prompt of EXIT's sentence classifier: ``[BOS] + ids(head) + ids(context) + ids(suffix)``.

The template holds ``{query}``, ``{context}`` and ``{sentence}`` once each, in that order; the
three pieces are tokenized separately, as the EXIT authors' code does, so the context can be cut
exactly (``head-tail``: only the context is ever cut) and the prefix is identical for every
sentence of a document. Written up in docs/exit.md ("The scorer").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.errors import PromptTooLongError
from ragsift.lm.prompts import EncodedPrompt, leading_special_ids
from ragsift.types import Document, Example, Sentence

__all__ = ["EXIT_TEMPLATE", "YesNoTemplate", "YesNoPromptEncoder", "document_context", "head_tail"]

#: EXIT's classifier prompt, verbatim (Gemma chat format), as in the authors' code.
EXIT_TEMPLATE = (
    "<start_of_turn>user\n"
    "Query:\n{query}\n"
    "Full context:\n{context}\n"
    "Sentence:\n{sentence}\n"
    'Is this sentence useful in answering the query? Answer only "Yes" or "No".<end_of_turn>\n'
    "<start_of_turn>model\n"
)

_PLACEHOLDERS = ("{query}", "{context}", "{sentence}")


@dataclass(frozen=True)
class YesNoTemplate:
    """A template split around its placeholders: ``before_query {query} before_context {context}
    before_sentence {sentence} after_sentence``."""

    before_query: str
    before_context: str
    before_sentence: str
    after_sentence: str

    @classmethod
    def parse(cls, template: str) -> YesNoTemplate:
        """Split ``template``; ValueError says which placeholder is missing, repeated or out of order."""
        counts = {p: template.count(p) for p in _PLACEHOLDERS}
        bad = [f"{p} appears {n} times" for p, n in counts.items() if n != 1]
        if bad:
            raise ValueError(
                "a Yes/No template needs {query}, {context} and {sentence} exactly once each; " + ", ".join(bad)
            )
        q, c, s = (template.index(p) for p in _PLACEHOLDERS)
        if not q < c < s:
            raise ValueError("the placeholders must come in the order {query}, {context}, {sentence}")
        return cls(
            before_query=template[:q],
            before_context=template[q + len("{query}") : c],
            before_sentence=template[c + len("{context}") : s],
            after_sentence=template[s + len("{sentence}") :],
        )

    def head(self, query: str) -> str:
        """The text before the document context, query filled in."""
        return self.before_query + query + self.before_context

    def suffix(self, sentence: str) -> str:
        """The text after the document context, sentence filled in."""
        return self.before_sentence + sentence + self.after_sentence

    def render(self, query: str, context: str, sentence: str) -> str:
        """The whole prompt as one string (for display; scoring encodes the pieces)."""
        return self.head(query) + context + self.suffix(sentence)


def document_context(document: Document) -> str:
    """EXIT's ``Full context``: the sentence's own document as ``"{title}\\n{text}"``."""
    return f"{document.title}\n{document.text}"


def head_tail(ids: Sequence[int], budget: int) -> list[int]:
    """The first ``ceil(budget/2)`` and the last ``floor(budget/2)`` ids (all of them if they fit)."""
    if len(ids) <= budget:
        return list(ids)
    if budget <= 0:
        return []
    head = (budget + 1) // 2
    tail = budget - head
    return list(ids[:head]) + (list(ids[-tail:]) if tail else [])


class YesNoPromptEncoder:
    """Builds the token ids of every sentence's prompt under a length budget."""

    def __init__(self, tokenizer: Any, template: str, max_length: int, overflow: str, owner: str = "CausalYesNoScorer") -> None:
        self.tokenizer = tokenizer
        self.template = YesNoTemplate.parse(template)
        self.max_length = max_length
        self.overflow = overflow
        self.owner = owner
        self.bos = tuple(leading_special_ids(tokenizer))

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def encode_example(self, example: Example, sentences: Sequence[Sentence]) -> list[EncodedPrompt]:
        """One prompt per sentence, in the order given; the head and each context are encoded once."""
        head = self.bos + tuple(self._encode(self.template.head(example.question)))
        contexts: dict[int, list[int]] = {}
        prompts = []
        for sentence in sentences:
            if sentence.doc_index not in contexts:
                contexts[sentence.doc_index] = self._encode(document_context(example.documents[sentence.doc_index]))
            suffix = tuple(self._encode(self.template.suffix(sentence.text)))
            where = (f"example '{example.id}', sentence {sentence.id} "
                     f"(document {sentence.doc_index} {example.documents[sentence.doc_index].title!r})")
            prompts.append(self._fit(where, head, contexts[sentence.doc_index], suffix))
        return prompts

    def encode_record(self, query: str, context: str, sentence: str, where: str = "a record") -> EncodedPrompt:
        """The prompt of one (query, document context, sentence) triple, encoded as
        :meth:`encode_example` encodes it (a labeler's record; ``where`` names it in errors)."""
        head = self.bos + tuple(self._encode(self.template.head(query)))
        return self._fit(where, head, self._encode(context), tuple(self._encode(self.template.suffix(sentence))))

    def _fit(self, where: str, head: tuple[int, ...], context: list[int], suffix: tuple[int, ...]) -> EncodedPrompt:
        budget = self.max_length - len(head) - len(suffix)
        if len(context) <= budget:
            return EncodedPrompt(head + tuple(context), suffix, len(context))
        total = len(head) + len(context) + len(suffix)
        where = f"{self.owner}: {where}"
        sizes = f"instruction+query {len(head)}, document context {len(context)}, sentence piece {len(suffix)}"
        if budget < 0:
            raise PromptTooLongError(
                f"{where}: the prompt without any document context already has {len(head) + len(suffix)} tokens, "
                f"over max_length {self.max_length} ({sizes}); the instruction, query and sentence are never cut. "
                f"Raise max_length (up to the model's limit) or split the text into shorter sentences."
            )
        if self.overflow == "error":
            raise PromptTooLongError(
                f"{where}: the prompt has {total} tokens, over max_length {self.max_length} ({sizes}). "
                f'Set overflow = "head-tail" to keep the first and last parts of the document context, '
                f"or raise max_length (up to the model's limit)."
            )
        return EncodedPrompt(head + tuple(head_tail(context, budget)), suffix, len(context), truncated=True)
