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


EXIT = {"label": "EXIT, Llama-3.1-8B, Contriever top-5", "source": "methods.md: EXIT headline, avg EM", "metric": "em",
        "value": 37.9, "total_seconds": 0.8}


def test_published_anchors_are_read_and_checked() -> None:
    """Issue 27: [[evaluation.anchors]] declare published figures for the report's plots."""
    (anchor,) = EvaluationSettings.from_table({"anchors": [EXIT]}).anchors
    assert (anchor.label, anchor.metric, anchor.value, anchor.total_seconds, anchor.context_tokens) == \
        (EXIT["label"], "em", 37.9, 0.8, None)
    assert EvaluationSettings.from_table({}).anchors == []


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"seconds": 0.8}, "anchor 1 ('EXIT, Llama-3.1-8B, Contriever top-5'): unknown key(s) seconds (an anchor has: "
                           "compress_seconds, context_tokens, label, metric, prompt_tokens, source, total_seconds, value)"),
        ({"source": None}, "'anchors.0.source'"),
        ({"source": "  "}, "non-blank 'label' and 'source'"),
        ({"metric": "accuracy"}, "'anchors.0.metric'"),
        ({"value": 379}, "'anchors.0.value'"),
        ({"total_seconds": 0}, "'anchors.0.total_seconds'"),
        ({"total_seconds": True}, "expects a number, not true"),
        ({"total_seconds": None}, "has no cost: give context_tokens, prompt_tokens, total_seconds or compress_seconds"),
    ],
)
def test_bad_anchors_are_refused(change: dict, needle: str) -> None:  # type: ignore[type-arg]
    anchor = {k: v for k, v in {**EXIT, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match="run.toml \\[evaluation\\]") as info:
        EvaluationSettings.from_table({"anchors": [anchor]}, "run.toml")
    assert needle in str(info.value)


def test_anchors_come_from_a_config_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ragsift.config import load_config

    path = tmp_path / "run.toml"
    path.write_text('[compressor]\nname = "none"\n\n[evaluation]\nlimit = 3\n\n[[evaluation.anchors]]\n'
                    'label = "EXIT"\nsource = "methods.md"\nmetric = "em"\nvalue = 37.9\ntotal_seconds = 0.8\n',
                    encoding="utf-8")
    config = load_config(path)
    assert EvaluationSettings.from_table(config.evaluation, config.source).anchors[0].total_seconds == 0.8
    path.write_text(path.read_text(encoding="utf-8") + "\n[[evaluation.anchors]]\nlabel = 'x'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'anchors.1.source' is required"):
        EvaluationSettings.from_table(load_config(path).evaluation, str(path))


def test_the_documented_anchor_example_is_valid() -> None:
    """docs/evaluation.md's [[evaluation.anchors]] example reads as a valid anchor, with the figure
    the reference file states (EXIT's headline EM and total latency)."""
    import tomllib
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    block = docs.split("### Published anchors", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    table = tomllib.loads(block)["evaluation"]
    (anchor,) = EvaluationSettings.from_table(table).anchors
    assert (anchor.metric, anchor.value, anchor.total_seconds) == ("em", 37.9, 0.8)
