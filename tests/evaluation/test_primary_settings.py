"""Issue 48: [evaluation.primary], the declared primary test (a label as before, or a table)."""

from __future__ import annotations

import pytest

from ragsift.errors import ConfigError
from ragsift.evaluation.report.margins import PrimaryDesign
from ragsift.evaluation.run.settings import EvaluationSettings, PrimarySettings


def test_a_label_is_superiority_on_em_as_before() -> None:
    settings = EvaluationSettings.from_table({"primary": "bm25"})
    assert settings.primary == "bm25"
    assert settings.primary_test() == PrimarySettings(compressor="bm25")
    assert settings.primary_test().design() == PrimaryDesign("bm25")  # type: ignore[union-attr]
    assert EvaluationSettings.from_table({}).primary_test() is None


def test_a_table_declares_the_test_and_keeps_primary_a_label() -> None:
    table = {"compressor": "bridge-ranked", "test": "non-inferiority-then-superiority", "margin": 3.0,
             "looks": [0.25, 0.5, 0.75, 1.0], "max_n": 524, "futility": True, "spending": "pocock", "alpha": 0.025}
    settings = EvaluationSettings.from_table({"primary": table, "primary_chosen_on": "dev suite"})
    assert settings.primary == "bridge-ranked"  # every reader of the label is unchanged
    test = settings.primary_test()
    assert test is not None and test.margin == 3.0 and test.metric == "em" and test.looks == [0.25, 0.5, 0.75, 1.0]
    design = test.design()
    assert design == PrimaryDesign("bridge-ranked", "em", "non-inferiority-then-superiority", 3.0, 0.025,
                                   (0.25, 0.5, 0.75, 1.0), "pocock", 524, True)
    # the existing label checks apply to the table's compressor
    assert settings.check_labels(["none", "bridge-ranked"], "run.toml") == "none"
    baseline = EvaluationSettings.from_table({"primary": {"compressor": "none"}})
    with pytest.raises(ConfigError, match="primary 'none' is the baseline"):
        baseline.check_labels(["none", "bm25"], "run.toml")
    with pytest.raises(ConfigError, match="is a sweep family"):
        EvaluationSettings.from_table({"primary": {"compressor": "exit"}}).check_labels(["none"], "r", ["exit"])


@pytest.mark.parametrize(("table", "message"), [
    ({"compressor": "x", "test": "equivalence"}, r"'margin': an equivalence test needs a margin \(> 0"),
    ({"compressor": "x", "test": "non-inferiority"}, "'margin': a non-inferiority test needs a margin"),
    ({"compressor": "x", "colour": 1}, r"unknown parameter 'colour' \(known: alpha, compressor, futility"),
    ({"compressor": "x", "looks": [0.5, 0.9], "max_n": 100}, "the last look must be 1.0"),
    ({"compressor": "x", "looks": [0.5, 0.5, 1.0], "max_n": 100}, "increasing"),
    ({"compressor": "x", "looks": [0.5, 1.0]}, "declare max_n"),
    ({"compressor": "x", "margin": -1}, "'margin': Input should be greater than 0"),
    ({"compressor": "x", "futility": True}, "futility stops a non-inferiority test"),
    ({"compressor": "x", "alpha": True}, "'alpha': expects a number, not true"),
    ({"compressor": "x", "alpha": 0.6}, "'alpha'"),
    ({"compressor": "x", "spending": "haybittle"}, "'spending'"),
    ({"test": "superiority"}, "'compressor' is required"),
])
def test_table_errors_name_the_table_and_the_key(table: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=r"run.toml \[evaluation.primary\]: .*" + message):
        EvaluationSettings.from_table({"primary": table}, "run.toml")
