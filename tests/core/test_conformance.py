"""Every registered plugin passes the conformance checks of its stage."""

from __future__ import annotations

import pytest

from ragsift.registry import STAGES, get_registry
from ragsift.testing import check_plugin, checks_for

CASES = [(stage, name) for stage in STAGES for name in get_registry().names(stage)]


@pytest.mark.parametrize(("stage", "name"), CASES, ids=[f"{s}:{n}" for s, n in CASES])
def test_plugin_conforms(stage, name):
    check_plugin(stage, name)


def test_every_core_stage_has_plugins_under_test():
    stages = {stage for stage, _ in CASES}
    assert {"splitter", "scorer", "selector", "assembler", "compressor", "dataset"} <= stages


def test_kit_catches_a_broken_selector():
    from ragsift.selectors.base import Selector
    from ragsift.types import Selection

    class OutOfRange(Selector):
        def select(self, example, sentences, scores):  # type: ignore[no-untyped-def]
            return Selection([len(sentences)] if len(sentences) else [])

    with pytest.raises(AssertionError, match="out of range"):
        for check in checks_for("selector"):
            check(OutOfRange)


def test_kit_catches_a_plugin_accepting_unknown_keys():
    from ragsift.assemblers.base import Assembler

    class Lax(Assembler):
        def __init__(self, **params):  # type: ignore[no-untyped-def]
            self.params = params

        def assemble(self, documents, sentences, kept):  # type: ignore[no-untyped-def]
            return ""

    with pytest.raises(AssertionError, match="accepted an unknown parameter"):
        check_plugin("assembler", Lax)


def test_check_plugin_infers_the_stage_and_refuses_a_mismatch():
    from ragsift.selectors.top_k import TopKSelector

    check_plugin(TopKSelector)
    check_plugin("top-k")
    with pytest.raises(AssertionError, match="is a selector plugin, not a scorer"):
        check_plugin("scorer", TopKSelector)


def test_kit_checks_declared_capabilities():
    import numpy as np

    from ragsift.scorers.base import Scorer
    from ragsift.selectors.top_k import TopKSelector

    class Greedy(TopKSelector):  # promises at most k but keeps everything
        def select(self, example, sentences, scores):  # type: ignore[no-untyped-def]
            from ragsift.types import Selection

            return Selection(list(range(len(sentences))))

    with pytest.raises(AssertionError, match="over its max_kept 5"):
        check_plugin(Greedy)

    class Noisy(Scorer):
        deterministic = False
        top = 1.0

        def score_range(self):  # type: ignore[no-untyped-def]
            return (0.0, self.top)

        def score(self, example, sentences):  # type: ignore[no-untyped-def]
            return np.random.default_rng().random(len(sentences))

    check_plugin(Noisy)  # declared nondeterministic: no determinism check
    Noisy.top = 0.5
    with pytest.raises(AssertionError, match="outside its score_range"):
        check_plugin(Noisy)
