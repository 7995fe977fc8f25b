"""The argparse types the commands share (ragsift/cli_types.py)."""

from __future__ import annotations

import argparse

import pytest

from ragsift.cli import build_parser
from ragsift.cli_types import positive, positive_int


def test_a_positive_number_passes_and_anything_else_says_what_is_wrong():
    assert positive_int("3") == 3 and positive(float)("0.5") == 0.5
    for text, message in (("0", "must be > 0; got 0"), ("-2", "must be > 0; got -2"), ("two", "expected a number; got 'two'"),
                          ("1.5", "expected a number; got '1.5'")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_int(text)


@pytest.mark.parametrize("argv", [["evaluate", "-c", "x", "-o", "y"], ["train", "-c", "x"]])
def test_every_limit_flag_refuses_zero_and_words(argv, capsys):
    assert build_parser().parse_args([*argv, "--limit", "2"]).limit == 2
    for bad, message in (("0", "must be > 0"), ("all", "expected a number")):
        with pytest.raises(SystemExit):
            build_parser().parse_args([*argv, "--limit", bad])
        err = capsys.readouterr().err
        assert "--limit" in err and message in err
