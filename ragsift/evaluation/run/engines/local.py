"""The local engine: every compressor of the plan in this process, one after another, each
example compressed (and read) in order and written as soon as it is done (``--engine local``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.errors import RagsiftError
from ragsift.evaluation.predictions import PredictionWriter, read_records
from ragsift.evaluation.run import sweep as sw
from ragsift.evaluation.run.caches import RunCaches, attach_caches
from ragsift.evaluation.run.plan import RunPlan, make_record
from ragsift.evaluation.run.settings import EvaluationSettings
from ragsift.evaluation.run.timing import timed_compress, timed_read
from ragsift.metrics.base import Metric
from ragsift.output_files import describe_os_error
from ragsift.readers.base import ReaderAnswer
from ragsift.types import Example

__all__ = ["EvaluationInterrupted", "LocalEngine", "evaluate_compressor", "problem"]


class EvaluationInterrupted(RagsiftError):
    """A run stopped on an error; the records written so far are kept for ``--resume``."""


class LocalEngine:
    """``--engine local``: the :class:`~ragsift.evaluation.run.engines.Engine` of this process."""

    def check(self, plan: RunPlan) -> None:
        """Nothing to check: this process runs it."""

    def run(self, plan: RunPlan, run_dir: Path, paths: Mapping[str, Path]) -> dict[str, Any]:
        reader, caches = attach_caches(plan.compressors, plan.reader, plan.settings.cache, run_dir,
                                       share=sw.sweep_shares(plan.families))
        for label, compressor in plan.compressors.items():
            evaluate_compressor(label, compressor, reader, plan.subsets[label], plan.metrics, plan.settings, paths[label],
                                plan.options.progress, caches, plan.positions)
        return caches.report()


def evaluate_compressor(label: str, compressor: Any, reader: Any, examples: list[Example],
                         metrics: Sequence[Metric], settings: EvaluationSettings, path: Path,
                         progress: bool, caches: RunCaches | None = None,
                         positions: Mapping[str, int] | None = None) -> int:
    """Compress (and read) the examples not yet in ``path``; ``positions``: each example's place
    in the whole run (a shard's examples keep theirs, so ``reader_limit`` reads the same ones)."""
    from tqdm import tqdm

    done = {r["id"] for r in read_records(path)}
    todo = [ex for ex in examples if ex.id not in done]
    if not todo:
        return 0
    compressor.warm_up()
    if reader is not None:
        reader.warm_up()
    for metric in metrics:
        metric.warm_up()
    position = dict(positions) if positions is not None else {ex.id: i for i, ex in enumerate(examples)}
    reader_limit = settings.reader_limit if settings.reader_limit is not None else len(position)
    written = 0
    bar = tqdm(total=len(examples), initial=len(examples) - len(todo), desc=f"evaluate [{label}]", unit="ex",
               disable=not progress, file=sys.stderr)
    try:
        for _ in range(settings.warmup):  # untimed: caches, lazy imports, CUDA kernels
            with caches.read_only() if caches is not None else contextlib.nullcontext():  # keep cold timings out
                warm = compressor.compress(todo[0])
                if reader is not None and reader_limit > 0:
                    reader.answer_many([todo[0].question], [warm.text])
        with PredictionWriter(path) as writer:
            for start in range(0, len(todo), settings.batch_size):
                batch = todo[start : start + settings.batch_size]
                results = [timed_compress(compressor, ex, settings.repeats) for ex in batch]
                answers: list[ReaderAnswer | None] = [None] * len(batch)
                seconds: list[float | None] = [None] * len(batch)
                read = [i for i, ex in enumerate(batch) if reader is not None and position[ex.id] < reader_limit]
                if read:
                    got, read_seconds = timed_read(reader, [batch[i].question for i in read],
                                                   [results[i].text for i in read], settings.repeats)
                    for i, reply, s in zip(read, got, read_seconds, strict=True):
                        answers[i], seconds[i] = reply, s
                for ex, result, answer, secs in zip(batch, results, answers, seconds, strict=True):
                    writer.write(make_record(label, ex, result, answer, secs, metrics))
                    written += 1
                    bar.update(1)
    except (Exception, KeyboardInterrupt) as exc:
        saved = (f"'{label}': {len(done) + written} of {len(examples)} examples are saved in {path}; "
                 "rerun the same command with --resume to finish")
        if isinstance(exc, KeyboardInterrupt):
            print(f"ragsift: interrupted: {saved}.", file=sys.stderr)
            raise
        first = describe_os_error(exc, path) if isinstance(exc, OSError) and not exc.filename else problem(exc)
        raise EvaluationInterrupted(f"{first}\n{saved} (after fixing the problem).") from exc
    finally:
        bar.close()
    return written


def problem(exc: BaseException) -> str:
    """One line for any exception: ragsift's own message, an OS error's path and reason, or
    the type and text of an unexpected error."""
    if isinstance(exc, RagsiftError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return f"unexpected {type(exc).__name__}: {exc}"
