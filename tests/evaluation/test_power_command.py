"""Issue 48: `ragsift power` plans from a pilot run folder (built here), a discordance or an SD."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.evaluation.predictions import PredictionWriter, prediction_path
from ragsift.evaluation.report.power import exact_binary_sample_size


def _pilot(tmp_path: Path) -> Path:
    """20 questions: 'ranked' alone right on 3, 'none' alone right on 2, both right on 5, neither on
    10 (discordance 5 / 20 = 0.25); 'same' agrees with none everywhere. The records are written in
    another order than the ids, and 'ranked' has one extra question none lacks (left out)."""
    run = tmp_path / "pilot"
    (run / "predictions").mkdir(parents=True)
    pattern = [(1, 0)] * 3 + [(0, 1)] * 2 + [(1, 1)] * 5 + [(0, 0)] * 10
    rows = {"none": [(f"q{i:02d}", b) for i, (_, b) in enumerate(pattern)],
            "ranked": [(f"q{i:02d}", a) for i, (a, _) in enumerate(pattern)][::-1] + [("extra", 1)],
            "same": [(f"q{i:02d}", b) for i, (_, b) in enumerate(pattern)]}
    for label, items in rows.items():
        with PredictionWriter(prediction_path(run, label)) as writer:
            for example_id, em in items:
                writer.write({"id": example_id, "compressor": label, "metrics": {"em": float(em)}})
    summary = {"baseline": "none", "compressors": {k: {} for k in rows},
               "metrics": {"em": {"label": "EM", "unit": "%", "scale": 100.0, "binary": True}}}
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return run


def test_power_from_a_pilot_run_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Discordance 0.25 at +10 EM points: Connor's n = (1.95996 x 0.5 + 0.84162 x sqrt(0.24))^2 /
    0.01 = (0.97998 + 0.41231)^2 / 0.01 = 193.85 -> 194; the exact McNemar test needs a few more
    (the first n whose exact power reaches 0.8). The pilot's 20 questions: MDD by Connor's formula."""
    run = _pilot(tmp_path)
    assert main(["power", "--pilot", str(run), "--difference", "10", "--compressor", "ranked"]) == 0
    out = capsys.readouterr().out
    exact = exact_binary_sample_size(0.10, 0.25)
    assert f"ranked: discordance 0.25 (5 of 20 pilot pairs): {exact} questions for a difference of +10 EM points" in out
    assert "Connor's normal approximation says 194" in out and 194 < exact < 215
    assert "the pilot's 20 questions could only have detected differences of at least" in out
    # every compressor when none is named; one that never disagrees has nothing to plan from
    assert main(["power", "--pilot", str(run), "--difference", "10"]) == 0
    assert "same: agrees with 'none' on all 20 pilot questions" in capsys.readouterr().out
    # non-inferiority at a 5-point margin, true difference 0: (1.64485 + 0.84162)^2 x 0.25 / 0.0025 = 618.3
    assert main(["power", "--pilot", str(run), "--compressor", "ranked", "--difference", "0", "--margin", "5"]) == 0
    assert "619 questions for non-inferiority at margin 5 EM points" in capsys.readouterr().out


def test_power_without_a_pilot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "--discordance", "0.25", "--difference", "3"]) == 0
    assert "Connor's normal approximation says 2178" in capsys.readouterr().out
    # paired t: (1.95996 + 0.84162)^2 / 0.1^2 = 784.9 by the normal approximation; the t a little more
    assert main(["power", "--sd", "30", "--difference", "3", "--metric", "f1"]) == 0
    out = capsys.readouterr().out
    n = int(out.split(": ")[1].split()[0])
    assert 785 <= n <= 790


def test_power_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pilot = str(_pilot(tmp_path))
    for args, message in ((["--difference", "3"], "give exactly one of --pilot"),
                          (["--discordance", "0.2", "--difference", "0"], "give --margin"),
                          (["--pilot", pilot, "--difference", "3", "--compressor", "none"], "not a compressor of the run"),
                          (["--pilot", str(tmp_path), "--difference", "3"], "no summary.json")):
        assert main(["power", *args]) != 0
        assert message in capsys.readouterr().err
