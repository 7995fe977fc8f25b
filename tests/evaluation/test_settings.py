"""The [evaluation] table is validated: unknown keys and bad values are errors."""

from __future__ import annotations

import pytest

from ragsift.errors import ConfigError
from ragsift.evaluation.run.settings import EvaluationSettings


def test_defaults_and_metric_tables() -> None:
    settings = EvaluationSettings.from_table({"metrics": ["f1", {"name": "evidence", "min_overlap": 0.6}]})
    assert settings.repeats == 1 and settings.bootstrap_samples == 1000
    assert settings.metric_specs() == [{"name": "f1"}, {"name": "evidence", "min_overlap": 0.6}]
    assert EvaluationSettings.from_table({}).metric_specs() is None


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"repeat": 5}, "unknown parameter 'repeat'"),
        ({"repeats": 0}, "'repeats'"),
        ({"confidence": 1.5}, "'confidence'"),
        ({"metrics": [{"min_overlap": 0.5}]}, "needs a 'name'"),
        # both tables ([evaluation] and [evaluation.ray]) refuse unknown keys and true/false for a number
        ({"bootstrap_samples": True}, "'bootstrap_samples': expects a number, not true"),
        ({"ray": {"batch_size": True}}, "'ray.batch_size': expects a number, not true"),
        ({"ray": {"max_restarts": False}}, "'ray.max_restarts': expects a number, not false"),
        ({"ray": {"adress": "auto"}}, "unknown parameter 'ray.adress'"),
    ],
)
def test_bad_tables_are_refused(table: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match="run.toml \\[evaluation\\]") as info:
        EvaluationSettings.from_table(table, "run.toml")
    assert needle in str(info.value)
