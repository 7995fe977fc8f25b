"""Argument types shared by the command-line commands (``type=`` of argparse arguments)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TypeVar

from ragsift.suggestions import did_you_mean

__all__ = ["positive", "positive_int", "one_of", "add_set_option"]

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


def one_of(known: Iterable[str], what: str) -> Callable[[str], str]:
    """An argparse type: one of the ``known`` names, else a message listing them, with a
    did-you-mean hint when one is close (``--stage scorerr``)."""
    names = list(known)

    def parse(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; {what}s: {', '.join(names)}.{did_you_mean(text, names)}")
        return text

    return parse


def _key_value(text: str) -> str:
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, such as compressor.selector.k=3; got {text!r}")
    return text


def add_set_option(parser: argparse.ArgumentParser, what: str = "the config") -> None:
    """``--set KEY=VALUE`` (repeatable): a dotted override of ``what``, read by
    :meth:`ragsift.config.RunConfig.with_overrides`."""
    parser.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[], type=_key_value,
                        help=f"override one value of {what}, as a dotted TOML key and a TOML value (else a string): "
                        "--set compressor.selector.k=3, --set 'compressors.exit.selector=\"threshold\"'; repeatable, "
                        "applied in order, checked as the file is, recorded in the run manifest")
