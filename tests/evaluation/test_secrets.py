"""The API key is used but never written: not in output, logs, errors, manifests or records."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from openai_fakes import fake_openai_server

from ragsift.cli import main

DATA = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"
SECRET = "sk-live-SECRET-never-log-9e1d"


def _config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f"""
[compressors.oracle]
name = "oracle"
[reader]
name = "openai"
base_url = "{base_url}"
model = "fake"
api_key_env = "RAGSIFT_SECRET_KEY"
max_retries = 0
[evaluation]
limit = 2
warmup = 1
metrics = ["exact-match", "evidence"]
""")
    return path


@pytest.mark.parametrize("status", [200, 401, 500])
def test_the_key_never_appears(status: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("RAGSIFT_SECRET_KEY", SECRET)
    caplog.set_level(logging.DEBUG)  # the openai / httpx loggers included
    out = tmp_path / "run"
    with fake_openai_server([status]) as server:
        code = main(["evaluate", "--config", str(_config(tmp_path, server.base_url)), "--data", str(DATA),
                     "--out", str(out), "-q"])
    captured = capsys.readouterr()
    assert server.headers and all(h["authorization"] == f"Bearer {SECRET}" for h in server.headers)
    assert code == (0 if status == 200 else 2)
    if status != 200:
        assert f"HTTP {status}" in captured.err
    everything = captured.out + captured.err + caplog.text
    for path in out.rglob("*"):
        if path.is_file():
            everything += path.read_text(errors="replace")
    assert SECRET not in everything
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["reader"]["config"]["api_key_env"] == "RAGSIFT_SECRET_KEY"


def test_a_long_key_cut_by_the_clip_of_an_echoing_error_body_is_not_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24, case 4: the server's body is cut to 500 characters inside the key; what is left of
    the key must not reach stderr or the manifest."""
    long_key = "sk-long-" + "0123456789abcdef" * 29  # 472 characters: the clip falls inside it
    monkeypatch.setenv("RAGSIFT_SECRET_KEY", long_key)
    out = tmp_path / "run"
    with fake_openai_server([500], api_key_echo=True) as server:
        code = main(["evaluate", "--config", str(_config(tmp_path, server.base_url)), "--data", str(DATA),
                     "--out", str(out), "-q"])
    captured = capsys.readouterr()
    assert code == 2 and "HTTP 500" in captured.err and "Bearer ***" in captured.err, captured.err
    everything = captured.out + captured.err + "".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert long_key[:20] not in everything
