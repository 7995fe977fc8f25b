"""The trainers' learning-rate schedule: step i of n runs at ``learning_rate * (n - i) / n`` (the
full rate first, ``learning_rate / n`` last, never 0), and a resumed run goes on where it stopped."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from ragsift.trainers.base import TrainingJob
from ragsift.trainers.checkpoint import run_steps

STEPS, RATE = 5, 0.1


class _Stop(Exception):
    """Raised by a step to end a run early (a killed run; its last checkpoint stays)."""


def _train(job: TrainingJob, folder: Path, stop_at: int | None = None) -> tuple[list[float], list[dict[str, float]]]:
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=123.0)  # overwritten at every step
    x = torch.ones(4, 2)
    rates: list[float] = []

    def train_loss(step: int) -> object:
        if step == stop_at:
            raise _Stop
        rates.append(optimizer.param_groups[0]["lr"])  # the rate this step runs at
        return (model(x) ** 2).mean()

    params = SimpleNamespace(steps=STEPS, learning_rate=RATE, eval_every=0)
    try:
        history = run_steps(job, params, folder, model, optimizer, train_loss, lambda: {}, "test")
    except _Stop:
        history = []
    return rates, history


def test_the_learning_rate_decays_linearly_from_the_full_rate(tmp_path: Path) -> None:
    """Planted version that this catches: the schedule off by one step (``lr_at(step + 1)``, or
    ``(steps - step - 1) / steps``): the first step below the full rate and the last one at 0."""
    rates, history = _train(TrainingJob([], [], tmp_path, progress=False, checkpoint_every=100), tmp_path / "ckpt")
    assert rates == pytest.approx([RATE * (STEPS - i) / STEPS for i in range(STEPS)])
    assert rates[0] == pytest.approx(RATE) and rates[-1] == pytest.approx(RATE / STEPS)
    assert [h["step"] for h in history] == list(range(1, STEPS + 1))


def test_a_resumed_run_continues_the_schedule(tmp_path: Path) -> None:
    whole, whole_history = _train(TrainingJob([], [], tmp_path, progress=False, checkpoint_every=2), tmp_path / "whole")
    folder = tmp_path / "killed"
    before, _ = _train(TrainingJob([], [], tmp_path, progress=False, checkpoint_every=2), folder, stop_at=3)
    assert before == whole[:3]  # killed in step 4, after the checkpoint of step 2
    after, history = _train(TrainingJob([], [], tmp_path, progress=False, checkpoint_every=2, resume=True), folder)
    assert after == pytest.approx(whole[2:])  # steps 3..5 again, at their own rates
    assert history == whole_history
