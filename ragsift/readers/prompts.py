"""Reader prompt templates: a system part with ``{context}`` and a user part with ``{query}``.

The default is the EXIT paper's reader prompt (Hwang et al., 2025, Table 7), sent as a system
message (the context part) and a user message (``"Query: {query}\\nAnswer:"``).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

__all__ = ["EXIT_READER_SYSTEM", "EXIT_READER_USER", "ReaderPrompt", "check_reader_template"]

EXIT_READER_SYSTEM = (
    "Context information is below.\n"
    "---------------------\n"
    "{context}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query. "
    "Do not provide any explanation."
)
EXIT_READER_USER = "Query: {query}\nAnswer:"

_ALLOWED = ("context", "query")


def check_reader_template(template: str) -> str:
    """Return ``template`` if it only uses ``{context}`` and ``{query}``; raise ``ValueError`` otherwise.

    Literal braces must be doubled (``{{`` / ``}}``), as in :meth:`str.format`.
    """
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ValueError(f"is not a valid template ({exc}); write literal braces as '{{{{' and '}}}}'") from None
    unknown = sorted({f for f in fields if f not in _ALLOWED})
    if unknown:
        raise ValueError(
            f"uses unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            "only {context} and {query} are filled in"
        )
    return template


@dataclass(frozen=True)
class ReaderPrompt:
    """A system template and a user template; together they must use ``{context}`` and ``{query}``."""

    system: str = EXIT_READER_SYSTEM
    user: str = EXIT_READER_USER

    def __post_init__(self) -> None:
        check_reader_template(self.system)
        check_reader_template(self.user)
        both = self.system + "\n" + self.user
        for name in _ALLOWED:
            if "{" + name + "}" not in both.replace("{{", "").replace("}}", ""):
                raise ValueError(f"the reader templates never use {{{name}}}; the reader would not see the {name}")

    def messages(self, question: str, context: str) -> list[dict[str, str]]:
        """Chat messages: a system message (omitted when its template is empty) and a user message."""
        values = {"context": context, "query": question}
        out = []
        system = self.system.format(**values)
        if system:
            out.append({"role": "system", "content": system})
        out.append({"role": "user", "content": self.user.format(**values)})
        return out

    def plain(self, question: str, context: str) -> str:
        """One text prompt for models without a chat template: system, newline, user."""
        return "\n".join(m["content"] for m in self.messages(question, context))
