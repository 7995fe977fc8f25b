"""Issue 53 row 19: ``evaluate --engine ray -q`` prints nothing on stderr but ragsift's own errors.
Ray's C++ core wrote an ERROR line there on every run whatever ``logging_level`` said (an actor
pool's "constructor arguments in the object store and max_restarts > 0")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_process import REPO, ragsift

pytest.importorskip("ray.data")

RAY_LINE = (b"[2026-12-06 06:11:04,649 E 15538 15538] core_worker.cc:2465: Actor with class name: "
            b"'MapWorker(MapBatches(CompressStage))' and ID: 'de41' has constructor arguments in the object store "
            b"and max_restarts > 0.\n")


def test_ray_core_lines_are_dropped_and_everything_else_passes(capfd: pytest.CaptureFixture[str]) -> None:
    from ragsift.evaluation.run.engines.ray import without_ray_core_lines

    with without_ray_core_lines():
        os.write(2, b"ragsift: warning: one of ours\n" + RAY_LINE)
        os.write(2, b"[2026-12-06 06:11:05,001 I 1 2] logging.cc:303: Set ray log level\n")
        os.write(2, b"[not a Ray line] kept.cc:1: as it is\n")
    err = capfd.readouterr().err
    assert err == "ragsift: warning: one of ours\n[not a Ray line] kept.cc:1: as it is\n"
    os.write(2, RAY_LINE)  # afterwards stderr is itself again
    assert capfd.readouterr().err == RAY_LINE.decode()


@pytest.mark.slow  # starts a local Ray (about 30 s)
def test_a_quiet_ray_run_prints_nothing_on_stderr(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{REPO / "tests" / "data" / "hotpotqa-train-sf100.json"}"\n'
                      '[compressors.bm25]\nname = "bm25"\n[evaluation]\nlimit = 3\nwarmup = 0\nbootstrap_samples = 100\n'
                      "[evaluation.ray]\ncompress_actors = 1\nread_actors = 1\n")
    done = ragsift("evaluate", "-c", config, "-o", tmp_path / "run", "--engine", "ray", "--no-reader", "-q",
                   env={"RAY_ADDRESS": "", "RAGSIFT_RAY_ADDRESS": ""})
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    assert "bm25" in done.stdout and (tmp_path / "run" / "summary.json").is_file()
