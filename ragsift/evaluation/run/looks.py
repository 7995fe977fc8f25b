"""Sequential looks at the declared primary comparison (``[evaluation.primary] looks``).

A run with looks reads its questions in steps: at look k, the first ``ceil(f_k x N_d)`` questions
of each dataset ``d`` (the whole file in a one-dataset run), every compressor on them; then the
primary test on the questions read so far (the paired t of the primary metric in display units,
stratified by dataset in a suite) goes to the group-sequential decision
(:func:`ragsift.evaluation.report.sequential.primary_look_decision`: Lan-DeMets alpha spending
over the actual information fractions, questions read / ``max_n``). Each look is recorded in the
manifest (``looks``) as soon as it is made; the run stops reading at the first look that crosses a
boundary, and its summary covers the questions read. ``--resume`` recomputes the looks already
made from their records (the same records give the same decision) and continues at the next one;
``--until-look K`` stops after look K (status ``paused``) so that a long run can be made, and its
records committed, one look at a time.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragsift.errors import ConfigError
from ragsift.evaluation.run.plan import RunPlan, first_of_each
from ragsift.metrics.base import MetricOutput
from ragsift.types import Example

__all__ = ["LookRun", "look_examples", "run_looks", "check_looks"]


@dataclasses.dataclass
class LookRun:
    """Where the looks left the run: the plan of the questions read (all compressors), the
    sequential record for the manifest and the summary, and whether the run is paused."""

    plan: RunPlan
    sequential: dict[str, Any]
    paused: bool


def check_looks(plan: RunPlan) -> None:
    """Refuse, before anything is written, a sequential design this run cannot follow."""
    test = plan.settings.primary_test()
    if test is None or not test.looks:
        return
    owner = f"{plan.config.source} [evaluation.primary]"
    if plan.shard is not None:
        raise ConfigError(f"{owner}: sequential looks decide on all questions read so far; run them in one place "
                          "(no --shard), or declare no looks.")
    if len(plan.examples) != test.max_n:
        raise ConfigError(f"{owner}: max_n = {test.max_n} was declared, and this run has {len(plan.examples)} "
                          "questions (--limit or [evaluation] limit?); looks are fractions of the declared maximum, so "
                          "the run must hold exactly max_n questions (use --until-look K to stop after look K).")


def look_examples(examples: Sequence[Example], fraction: float) -> list[Example]:
    """The first ``ceil(fraction x N_d)`` examples of each dataset (of all, without a suite)."""
    return first_of_each(examples, lambda n: math.ceil(fraction * n - 1e-9))


def _restricted(plan: RunPlan, examples: Sequence[Example]) -> RunPlan:
    ids = {ex.id for ex in examples}
    return dataclasses.replace(plan, examples=list(examples), subsets={
        label: [ex for ex in subset if ex.id in ids] for label, subset in plan.subsets.items()})


def _paired(records: Mapping[str, Sequence[Mapping[str, Any]]], label: str, baseline: str, metric: str,
            scale: float) -> tuple[list[float], list[float], list[str] | None]:
    """The primary metric of ``label`` and the baseline on the questions both have, in display units."""
    def by_id(recs: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        return {str(r["id"]): r for r in recs if metric in r.get("metrics", {})}

    ours, theirs = by_id(records[label]), by_id(records[baseline])
    shared = sorted(set(ours) & set(theirs))
    strata = [str(ours[i]["dataset"]) for i in shared] if shared and "dataset" in ours[shared[0]] else None
    return ([float(ours[i]["metrics"][metric]) * scale for i in shared],
            [float(theirs[i]["metrics"][metric]) * scale for i in shared], strata)


def run_looks(plan: RunPlan, run_step: Callable[[RunPlan], dict[str, list[dict[str, Any]]]],
              outputs: Mapping[str, MetricOutput], record: Callable[[dict[str, Any]], None],
              until_look: int | None = None) -> LookRun:
    """Read the looks of the plan's primary design in order (``run_step`` evaluates a plan's
    questions not yet written and returns every compressor's records of them), deciding after each;
    ``record`` gets the sequential record after every look (the runner writes it to the manifest)."""
    from ragsift.evaluation.report.margins import paired_t
    from ragsift.evaluation.report.sequential import primary_look_decision

    test = plan.settings.primary_test()
    assert test is not None and test.looks and test.max_n
    design = test.design()
    owner = f"{plan.config.source} [evaluation.primary]"
    if test.metric not in outputs:
        raise ConfigError(f"{owner}: metric '{test.metric}' is not a metric of this run ({', '.join(sorted(outputs))}); "
                          "sequential looks need it (a reader for EM and F1).")
    scale = outputs[test.metric].scale
    history: list[tuple[float, Any]] = []
    sequential: dict[str, Any] = {}
    step = plan
    for k, fraction in enumerate(test.looks, start=1):
        step = _restricted(plan, look_examples(plan.examples, fraction))
        records = run_step(step)
        values, baseline, strata = _paired(records, test.compressor, plan.baseline, test.metric, scale)
        if len(values) < 2:
            raise ConfigError(f"{owner}: look {k} ({fraction:g} of {test.max_n}) pairs {len(values)} question(s) of "
                              f"'{test.compressor}' with '{plan.baseline}'; a look needs at least 2.")
        history.append((len(values) / test.max_n, paired_t(values, baseline, strata)))
        decision = primary_look_decision(design, history)
        sequential = {"design": design.to_dict(), **decision.to_dict(), "planned": list(test.looks),
                      "looks_done": k, "max_n": test.max_n}
        record(sequential)
        if decision.stop:
            return LookRun(step, sequential, paused=False)
        if until_look is not None and k >= until_look:
            return LookRun(step, sequential, paused=True)
    return LookRun(step, sequential, paused=False)
