"""The argparse types the commands share (ragsift/cli_types.py)."""

from __future__ import annotations

import argparse

import pytest

from ragsift.cli import build_parser
from ragsift.cli_types import one_of, positive, positive_int


def test_a_positive_number_passes_and_anything_else_says_what_is_wrong():
    assert positive_int("3") == 3 and positive(float)("0.5") == 0.5
    for text, message in (("0", "must be > 0; got 0"), ("-2", "must be > 0; got -2"), ("two", "expected a number; got 'two'"),
                          ("1.5", "expected a number; got '1.5'")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_int(text)


@pytest.mark.parametrize("argv", [["evaluate", "-c", "x", "-o", "y"], ["train", "-c", "x"], ["compress", "-c", "x"],
                                  ["label", "-l", "x", "-i", "y", "-o", "z"], ["tune", "-c", "x", "-o", "y"]])
def test_every_limit_flag_refuses_zero_and_words(argv, capsys):
    assert build_parser().parse_args([*argv, "--limit", "2"]).limit == 2
    for bad, message in (("0", "must be > 0"), ("-1", "must be > 0; got -1"), ("all", "expected a number")):
        with pytest.raises(SystemExit):
            build_parser().parse_args([*argv, "--limit", bad])
        err = capsys.readouterr().err
        assert "--limit" in err and message in err


def test_one_of_names_what_is_known_and_suggests_a_close_name():
    stage = one_of(["scorer", "selector"], "stage")
    assert stage("scorer") == "scorer"
    with pytest.raises(argparse.ArgumentTypeError, match=r"^unknown stage 'scorerr'; stages: scorer, selector\. Did you mean 'scorer'\?$"):
        stage("scorerr")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^unknown stage 'xyz'; stages: scorer, selector\.$"):
        stage("xyz")


@pytest.mark.parametrize("argv, message", [
    (["plugins", "--stage", "scorerr"], "argument --stage: unknown stage 'scorerr'; stages: splitter, scorer"),
    (["compress", "-c", "bm25", "--limit", "-1"], "argument --limit: must be > 0; got -1"),
])
def test_a_bad_argument_is_a_usage_error_not_a_bug(argv, message, capsys):
    from ragsift.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and "usage: ragsift" in err
    assert "a bug in ragsift" not in err
    if argv[0] == "plugins":
        assert "Did you mean 'scorer'?" in err
