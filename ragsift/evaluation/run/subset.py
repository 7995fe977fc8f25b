"""Some of a config's compressors: ``evaluate -c CONFIG#LABEL`` and ``--compressors a,b`` (as
lm-evaluation-harness's ``--tasks a,b``). The run holds only those: its records, summary and report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsift.config import RunConfig
from ragsift.errors import ConfigError
from ragsift.suggestions import did_you_mean

__all__ = ["parse_compressor_list", "select_compressors"]


def parse_compressor_list(text: str) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]`` (spaces around a label ignored); an empty or repeated label is an error."""
    labels = [part.strip() for part in text.split(",")]
    if not all(labels):
        raise ConfigError(f"--compressors {text!r}: give compressor labels separated by commas (e.g. 'none,bm25'); "
                          "one is empty.")
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ConfigError(f"--compressors {text!r}: {', '.join(repeated)} given twice.")
    return labels


def select_compressors(config: RunConfig, labels: Sequence[str], flag: str) -> RunConfig:
    """``config`` with only the compressors labelled ``labels`` (in the config's order), named in
    errors as ``flag`` (``--compressors a,b`` or ``CONFIG#LABEL``). With several, the run's
    baseline must be among them (else an error that says so); one alone is its own baseline. A
    declared primary comparison whose compressor is left out is dropped, and so are the
    ``[evaluation] limits`` of the compressors left out."""
    specs = config.compressor_specs()
    unknown = [label for label in labels if label not in specs]
    if unknown:
        raise ConfigError(f"{flag}: {config.source} has no compressor labelled '{unknown[0]}' (it has: {', '.join(specs)})."
                          f"{did_you_mean(unknown[0], specs)}")
    if len(labels) == len(specs):
        return config
    evaluation: dict[str, Any] = dict(config.evaluation)
    declared = evaluation.get("baseline")
    baseline = declared or ("none" if "none" in specs else next(iter(specs)))
    if len(labels) == 1:  # one compressor: its own baseline, nothing to compare (as a config with one)
        baseline = evaluation["baseline"] = labels[0]
    elif baseline not in labels:
        where = "[evaluation] baseline" if declared else "the default baseline"
        raise ConfigError(f"{flag}: the run's baseline '{baseline}' ({where} of {config.source}) is not among the "
                          f"compressors chosen ({', '.join(labels)}); every comparison is made against it. Add it "
                          f"(--compressors {','.join([baseline, *labels])}), or name another baseline among them "
                          f"(--set evaluation.baseline='\"{labels[0]}\"').")
    primary = evaluation.get("primary")
    primary_label = primary.get("compressor") if isinstance(primary, dict) else primary
    if primary_label is not None and primary_label not in labels:
        evaluation.pop("primary", None)
        evaluation.pop("primary_chosen_on", None)
    if isinstance(evaluation.get("limits"), dict):
        evaluation["limits"] = {k: v for k, v in evaluation["limits"].items() if k in labels}
    table = config.table()
    if config.compressors:
        table["compressors"] = {label: spec for label, spec in config.compressors.items() if label in labels}
    table["evaluation"] = evaluation
    return RunConfig.from_table(table, config.source, config.files, config.overrides)
