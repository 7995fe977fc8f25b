"""``ragsift serve`` refuses what it cannot serve with one clear line before it listens."""

from __future__ import annotations

import socket

import pytest

from ragsift.cli import main


def test_a_taken_port_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--config", "bm25", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"ragsift: error: cannot listen on 127.0.0.1:{port}" in err and "--port" in err


def test_a_config_with_several_compressors_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--config", "quickstart", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "'serve' needs a config with one compressor" in err and "CONFIG#LABEL" in err


@pytest.mark.parametrize(("args", "needle"), [
    (["--max-examples", "0"], "must be > 0"), (["--max-request-bytes", "lots"], "expected a number"),
    (["--max-wait-ms", "-1"], "--max-wait-ms must be >= 0"),
    (["--port", "70000"], "a port is 0 to 65535"), (["--port", "-1"], "a port is 0 to 65535"),
    (["--port", "http"], "expected a port number"), (["--header-timeout", "0"], "must be > 0"),
])
def test_bad_limits_are_refused(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["serve", "--config", "bm25", "--port", "0", *args])
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    assert code == 2 and needle in capsys.readouterr().err
