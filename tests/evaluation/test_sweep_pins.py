"""What a sweep's numbers rest on: its points share one caching scorer ("score once, select
many"), and a point's own ``limits`` entry wins over its family's."""

from __future__ import annotations

from pathlib import Path

from ragsift.evaluation.caches import attach_caches
from ragsift.evaluation.runner import RunOptions, plan_run
from ragsift.evaluation.sweep import sweep_shares

HOTPOT = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"  # development data
BM25 = """
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
splitter = "regex"
"""


def _config(tmp_path: Path, evaluation: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n{BM25}'
                    f'[evaluation]\nlimit = 5\nwarmup = 0\nbootstrap_samples = 100\n{evaluation}')
    return path


def test_the_points_of_a_sweep_share_one_caching_scorer(tmp_path: Path) -> None:
    """Planted version that this catches: ``attach_caches`` gives each point of a sweep its own
    caching scorer (``caches.scorers.get(label, scores)``, ignoring ``share``), so every point
    holds its own scorer and model, and the first point's scorer no longer serves the others."""
    config = _config(tmp_path, "[evaluation.sweep.bm25.selector]\nk = [1, 2, 3]\n")
    plan = plan_run(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False))
    points = [label for label, family in plan.families.items() if family == "bm25"]
    assert points == ["bm25@k=1", "bm25@k=2", "bm25@k=3"]
    _, caches = attach_caches(plan.compressors, None, "run", tmp_path / "run", share=sweep_shares(plan.families))
    shared = caches.scorers[points[0]]
    assert all(plan.compressors[label].scorer is shared for label in points)
    assert "none" not in caches.scorers  # no scorer to cache
    examples = plan.subsets[points[0]]
    for label in points:
        for example in examples:
            plan.compressors[label].compress(example)
    # one scorer scored each example once and served the other two points from its cache
    assert shared.stats == {"hits": 2 * len(examples), "misses": len(examples)}
    assert caches.report()["scores"] == shared.stats


def test_a_points_own_limit_wins_over_its_familys(tmp_path: Path) -> None:
    """Planted version that this catches: ``limits_by_label`` gives every point its family's
    limit even when the point has its own (``if family in limits: out[label] = limits[family]``)."""
    config = _config(tmp_path, 'limits = {bm25 = 2, "bm25@k=3" = 4}\n[evaluation.sweep.bm25.selector]\nk = [1, 3]\n')
    plan = plan_run(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False))
    # the examples each compressor of the run evaluates (the summary's n)
    assert {label: len(examples) for label, examples in plan.subsets.items()} == {"none": 5, "bm25@k=1": 2, "bm25@k=3": 4}
