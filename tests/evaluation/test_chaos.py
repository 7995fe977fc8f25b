"""Issue 9: ``ragsift evaluate`` against a local OpenAI-compatible server that randomly answers
500, 503, 429, truncated JSON, HTML, empty choices or nothing at all (a hang), killed with
SIGKILL at random points several times and resumed: every example ends up exactly once, with
the same answers as a run against a healthy server."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from cli_process import REPO
from openai_fakes import MISBEHAVIOURS, chaos, fake_openai_server

from ragsift.evaluation.predictions import read_records
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

pytestmark = pytest.mark.slow

HOTPOT = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"
LABELS = ("none", "oracle")
N = 12
KILLS = 3
SEED = 9


def _answer(body: dict) -> str:  # type: ignore[type-arg]
    """A deterministic answer per prompt, so that two runs can be compared answer by answer."""
    prompt = body["messages"][-1]["content"]
    return f"answer-{zlib.crc32(prompt.encode()) % 1000}"


def _config(path: Path, base_url: str) -> Path:
    path.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{HOTPOT}"
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[reader]
name = "openai"
base_url = "{base_url}"
model = "fake"
api_key_env = "RAGSIFT_CHAOS_KEY"
timeout = 0.5
max_retries = 20
backoff_seconds = 0.01
max_backoff_seconds = 0.05
max_concurrency = 4
[evaluation]
limit = {N}
warmup = 0
batch_size = 3
metrics = ["exact-match", "f1"]
""")
    return path


def _predictions(run: Path) -> dict[str, dict[str, str]]:
    return {label: {r["id"]: r["prediction"] for r in read_records(run / "predictions" / f"{label}.jsonl", repair=False)}
            for label in LABELS}


def _lines(run: Path) -> int:
    total = 0
    for label in LABELS:
        path = run / "predictions" / f"{label}.jsonl"
        total += path.read_bytes().count(b"\n") if path.exists() else 0
    return total


def _wait_resume_recorded(out: Path, resumes: int, process: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """Until the manifest lists this process's resume: a kill during start-up would test nothing."""
    deadline = time.monotonic() + 120
    while resumes and process.poll() is None:
        try:
            if len(json.loads((out / "manifest.json").read_text())["resumed"]) >= resumes:
                return
        except (OSError, ValueError, KeyError):
            pass  # not written yet
        assert time.monotonic() < deadline, "the resumed run never recorded its resume"
        time.sleep(0.02)  # polling a file another process writes


def _start(config: Path, out: Path, resume: bool) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**os.environ, "RAGSIFT_CHAOS_KEY": "k", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "ragsift.cli", "evaluate", "-c", str(config), "--out", str(out), "-q"]
    return subprocess.Popen([*command, *(["--resume"] if resume else [])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def test_killed_and_resumed_runs_against_a_chaotic_server_match_a_healthy_run(tmp_path: Path) -> None:
    os.environ["RAGSIFT_CHAOS_KEY"] = "k"
    healthy_run = tmp_path / "healthy"
    with fake_openai_server([200], answer=_answer) as healthy:
        run_evaluation(RunOptions(config=_config(tmp_path / "healthy.toml", healthy.base_url), out=healthy_run,
                                  progress=False, echo=lambda _: None))
    expected = _predictions(healthy_run)
    assert all(len(expected[label]) == N for label in LABELS)

    rng = random.Random(SEED)
    out = tmp_path / "chaos"
    started = time.monotonic()
    with fake_openai_server([200], answer=_answer, pick=chaos(SEED), hang_seconds=1.0) as server:
        config = _config(tmp_path / "chaos.toml", server.base_url)
        kills = 0
        for attempt in range(KILLS):
            process = _start(config, out, resume=attempt > 0)
            _wait_resume_recorded(out, attempt, process)
            # a random point: after a random number of the 2N records, plus a random instant
            # (a loaded machine may have overshot the last target: never ask for an empty range)
            last = 2 * N - (KILLS - attempt)
            target = rng.randint(min(_lines(out) + 1, last), last)
            deadline = time.monotonic() + 120
            while _lines(out) < target and process.poll() is None:
                assert time.monotonic() < deadline, f"no progress past {_lines(out)} records"
                time.sleep(0.02)  # polling files another process writes
            time.sleep(rng.uniform(0.0, 0.15))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.communicate(timeout=60)
        final = _start(config, out, resume=True)
        stdout, stderr = final.communicate(timeout=300)
    seconds = time.monotonic() - started

    assert final.returncode == 0, stderr
    assert kills == KILLS, "every kill should land while the run was still going"
    for label in LABELS:  # each example exactly once in the file itself, not only after de-duplication
        ids = [r["id"] for r in read_records(out / "predictions" / f"{label}.jsonl", repair=False)]
        assert len(ids) == len(set(ids)) == N, (label, ids)
    assert _predictions(out) == expected
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed"]) == KILLS
    assert set(MISBEHAVIOURS) <= set(server.behaviours), server.behaviours  # every kind of trouble was served
    assert seconds < 240
