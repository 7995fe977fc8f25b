"""A tokenizer read from a ``tokenizer.json`` file by the ``tokenizers`` library: token counts
without transformers or torch (the base install's default tokenizer, :data:`ragsift.models.DEFAULT_TOKENIZER`).

:class:`TokenizerFile` answers the calls ragsift makes of a transformers tokenizer when it counts
tokens (``tokenizer(text, add_special_tokens=False)["input_ids"]``, ``encode``, ``decode``), with
the same ids: a transformers "fast" tokenizer is this same file run by this same library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TokenizerFile"]


class TokenizerFile:
    """A ``tokenizers.Tokenizer`` behind the part of the transformers tokenizer interface that
    counting tokens uses. ``name_or_path`` is the file it was read from."""

    def __init__(self, tokenizer: Any, name_or_path: str) -> None:
        self.backend_tokenizer = tokenizer
        self.name_or_path = name_or_path

    @classmethod
    def from_file(cls, path: str | Path) -> TokenizerFile:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)), str(path))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The token ids of ``text``."""
        return list(self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def __call__(self, text: str | list[str], add_special_tokens: bool = True) -> dict[str, Any]:
        """``{"input_ids": ids}`` of a text (a list of id lists for a list of texts)."""
        if isinstance(text, str):
            return {"input_ids": self.encode(text, add_special_tokens)}
        encoded = self.backend_tokenizer.encode_batch(list(text), add_special_tokens=add_special_tokens)
        return {"input_ids": [list(e.ids) for e in encoded]}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return str(self.backend_tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))

    def __len__(self) -> int:
        """The vocabulary size, added tokens included (as ``len()`` of a transformers tokenizer)."""
        return int(self.backend_tokenizer.get_vocab_size(with_added_tokens=True))

    def __repr__(self) -> str:
        return f"TokenizerFile({self.name_or_path!r})"
