"""A real ``ragsift evaluate`` process killed with SIGKILL mid-run, then ``--resume``: every
example ends up in the predictions exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from openai_fakes import fake_openai_server

from ragsift.evaluation.predictions import read_records

pytestmark = pytest.mark.slow

DATA = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"
SECRET = "sk-resume-test-SECRET-1234"


def _evaluate(config: Path, out: Path, *extra: str) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**os.environ, "RAGSIFT_TEST_KEY": SECRET}
    return subprocess.Popen(
        [sys.executable, "-m", "ragsift.cli", "evaluate", "--config", str(config), "--out", str(out), "-q", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _wait_for_lines(
    path: Path, n: int, process: subprocess.Popen, deadline_s: float = 120  # type: ignore[type-arg]
) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        assert process.poll() is None, f"evaluate exited early:\n{process.communicate()[1]}"
        time.sleep(0.05)  # polling a file another process writes
    raise AssertionError(f"{path} did not reach {n} lines")


def test_killed_run_resumes_without_lost_or_duplicated_examples(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # the server answers 3 requests, then holds every further request until released: the run is
    # guaranteed to be mid-way (3 records written, the 4th waiting) when it is killed
    with fake_openai_server([200], answer=lambda body: "an answer", block_after=3) as server:
        config = tmp_path / "run.toml"
        config.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{DATA}"
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
[reader]
name = "openai"
base_url = "{server.base_url}"
model = "fake"
api_key_env = "RAGSIFT_TEST_KEY"
[evaluation]
limit = 6
warmup = 0
metrics = ["exact-match", "f1", "evidence", "empty"]
""")
        first = _evaluate(config, out)
        predictions = out / "predictions" / "none.jsonl"
        _wait_for_lines(predictions, 3, first)
        deadline = time.monotonic() + 120
        while len(server.requests) < 4:  # kill only once the 4th request is held in flight
            assert time.monotonic() < deadline, "the 4th request never reached the server"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert first.returncode == -signal.SIGKILL
        # a write cut short by the kill would look like this; resume must cope with it
        with predictions.open("a") as fh:
            fh.write('{"id": "half-written", "metri')
        server.release.set()
        second = _evaluate(config, out, "--resume")
        stdout, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    assert "bm25" in stdout and "EM" in stdout  # the summary table was printed
    for label in ("none", "bm25"):
        ids = [r["id"] for r in read_records(out / "predictions" / f"{label}.jsonl")]
        assert len(ids) == 6 and len(set(ids)) == 6, (label, ids)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["records"] == {"none": 6, "bm25": 6}
    assert manifest["command_line"][-1] == "--resume"
    # 3 answered before the kill, 1 held (lost with the process), 3 + 6 after the resume
    assert len(server.requests) == 3 + 1 + 3 + 6
    # the key was sent to the server but never written anywhere
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in server.headers)
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in stdout + stderr
