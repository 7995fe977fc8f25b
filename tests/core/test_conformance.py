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
