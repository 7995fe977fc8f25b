"""The training report's selection: every curve point says how many development questions keep
nothing, and ``max_empty`` restricts the chosen threshold to those that keep something."""

from __future__ import annotations

import numpy as np

from ragsift.trainers.base import DevPredictions
from ragsift.trainers.selection import selection_curves
from ragsift.training.report import write_report


def _dev() -> DevPredictions:
    dev = DevPredictions()
    # q1: its one evidence sentence scores 0.9; q2: its evidence scores only 0.3, above the others
    dev.add("q1", np.array([0.9, 0.2, 0.1]), np.array([True, False, False]), ["positive", "hard_negative", "distractor_negative"])
    dev.add("q2", np.array([0.3, 0.25, 0.05, 0.04]), np.array([True, False, False, False]),
            ["positive", "hard_negative", "distractor_negative", "distractor_negative"])
    return dev


def test_curves_give_the_share_of_questions_that_keep_nothing():
    curves = selection_curves(_dev())
    assert curves["threshold"][0.5]["empty"] == 0.5 and curves["threshold"][0.5]["kept"] == 0.5
    assert curves["threshold"][0.02]["empty"] == 0.0
    assert all(row["empty"] == 0.0 for row in curves["top_k"].values())


def _dev_where_the_best_threshold_empties_a_question() -> DevPredictions:
    dev = DevPredictions()
    noise = [0.5, 0.45, 0.4, 0.35, 0.3, 0.3, 0.3, 0.3]
    for qid in ("q1", "q2"):  # two facts above 0.6, eight other sentences in 0.3..0.5
        dev.add(qid, np.array([0.8, 0.7, *noise]), np.array([True, True] + [False] * 8), ["positive"] * 2 + ["hard_negative"] * 8)
    # q3's one fact scores 0.2, above its other sentences
    dev.add("q3", np.array([0.2, 0.1, 0.1, 0.1]), np.array([True, False, False, False]), ["positive"] + ["distractor_negative"] * 3)
    return dev


def test_max_empty_keeps_the_chosen_threshold_from_emptying_questions(tmp_path):
    dev = _dev_where_the_best_threshold_empties_a_question()
    free, bounded = selection_curves(dev), selection_curves(dev, max_empty=0.0)
    assert free["threshold"][free["best_threshold"]]["empty"] == 1 / 3 and free["best_threshold"] > 0.5
    assert bounded["best_threshold"] <= 0.2 and bounded["threshold"][bounded["best_threshold"]]["empty"] == 0.0
    assert bounded["threshold"][bounded["best_threshold"]]["f1"] < free["threshold"][free["best_threshold"]]["f1"]
    report = write_report(tmp_path, [{"step": 1, "train_loss": 0.5}], dev, max_empty=0.0)
    assert report["max_empty"] == 0.0 and report["threshold"]["0.2"]["empty"] == 0.0
    assert report["chosen"]["empty"] == 0.0  # top-k or a threshold that keeps something
