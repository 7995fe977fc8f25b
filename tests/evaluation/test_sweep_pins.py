"""What a sweep's numbers rest on: its points share one caching scorer per scoring stage ("score
once, select many"), and a point's own ``limits`` entry wins over its family's."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.evaluation.run.caches import attach_caches
from ragsift.evaluation.run.runner import RunOptions, plan_run
from ragsift.evaluation.run.sweep import sweep_shares

HOTPOT = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"  # development data
BM25 = """
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
splitter = "regex"
"""


def _config(tmp_path: Path, evaluation: str, compressors: str = "") -> Path:
    """BM25's config (and ``compressors``) with ``evaluation`` under its [evaluation] table."""
    path = tmp_path / "sweep.toml"
    path.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n{BM25}{compressors}'
                    f'[evaluation]\nlimit = 5\nwarmup = 0\nbootstrap_samples = 100\n{evaluation}')
    return path


CASCADE = """
[compressors.docs]
name = "cascade"
splitter = "regex"
scorer = "bm25"
selector = { name = "top-documents", k = 3 }
fine_scorer = "bm25"
fine_selector = { name = "top-k", k = 2 }
"""


@pytest.mark.parametrize(("family", "compressor", "sweep", "stages"), [
    ("bm25", "", "[evaluation.sweep.bm25.selector]\nk = [1, 2, 3]\n", ["scorer"]),
    ("docs", CASCADE, "[evaluation.sweep.docs.fine_selector]\nk = [1, 2, 3]\n", ["scorer", "fine_scorer"]),
], ids=["pipeline", "cascade"])
def test_the_points_of_a_sweep_share_one_caching_scorer(tmp_path: Path, family: str, compressor: str, sweep: str,
                                                        stages: list[str]) -> None:
    """One caching scorer per scoring stage for all the points of a sweep (a cascade has two).
    Planted version that this catches: ``attach_caches`` gives each point of a sweep its own
    caching scorers (``caches.scorers.get(label, scores)``, ignoring ``share``), so every point
    holds its own scorers and models, and the first point's no longer serve the others."""
    config = _config(tmp_path, sweep, compressor)
    plan = plan_run(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False))
    points = [label for label, fam in plan.families.items() if fam == family]
    assert points == [f"{family}@k=1", f"{family}@k=2", f"{family}@k=3"]
    _, caches = attach_caches(plan.compressors, None, "run", tmp_path / "run", share=sweep_shares(plan.families))
    shared = caches.scorers[points[0]]  # scoring stage -> caching scorer
    assert list(shared) == stages
    assert len({id(s) for s in shared.values()}) == len(stages)  # a cascade's two stages are two scorers
    for label in points:
        assert caches.scorers[label].keys() == shared.keys()
        for stage, scorer in shared.items():
            assert caches.scorers[label][stage] is scorer and getattr(plan.compressors[label], stage) is scorer
    assert "none" not in caches.scorers  # no scorer to cache
    examples = plan.subsets[points[0]]
    for label in points:
        for example in examples:
            plan.compressors[label].compress(example)
    # each stage's one scorer scored each example once and served the other two points from its cache
    for scorer in shared.values():
        assert scorer.stats == {"hits": 2 * len(examples), "misses": len(examples)}
    assert caches.report()["scores"] == {key: sum(s.stats[key] for s in shared.values()) for key in ("hits", "misses")}


def test_a_points_own_limit_wins_over_its_familys(tmp_path: Path) -> None:
    """Planted version that this catches: ``limits_by_label`` gives every point its family's
    limit even when the point has its own (``if family in limits: out[label] = limits[family]``)."""
    config = _config(tmp_path, 'limits = {bm25 = 2, "bm25@k=3" = 4}\n[evaluation.sweep.bm25.selector]\nk = [1, 3]\n')
    plan = plan_run(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False))
    # the examples each compressor of the run evaluates (the summary's n)
    assert {label: len(examples) for label, examples in plan.subsets.items()} == {"none": 5, "bm25@k=1": 2, "bm25@k=3": 4}
