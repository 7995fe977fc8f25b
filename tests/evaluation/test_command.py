"""The ``ragsift evaluate`` command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.cli import build_parser, main


def test_help_and_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["evaluate", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--config", "--data", "--out", "--limit", "--resume", "--no-reader"):
        assert flag in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "-c", "x", "-o", "y", "--limit", "0"])
    assert "--limit" in capsys.readouterr().err


def test_errors_are_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[compressor]\nname = "bm25"\n[evaluation]\nrepeat = 3\n')
    assert main(["evaluate", "-c", str(config), "-o", str(tmp_path / "run")]) == 2
    assert "unknown parameter 'repeat'" in capsys.readouterr().err
