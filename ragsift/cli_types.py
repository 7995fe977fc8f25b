"""Argument types shared by the command-line commands (``type=`` of argparse arguments)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

__all__ = ["positive", "positive_int"]

N = TypeVar("N", int, float)


def positive(kind: Callable[[str], N]) -> Callable[[str], N]:
    """An argparse type: a number of ``kind`` above zero, else a message saying what was wrong."""

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0; got {text}")
        return value

    return parse


#: a whole number >= 1 (``--limit``)
positive_int = positive(int)
