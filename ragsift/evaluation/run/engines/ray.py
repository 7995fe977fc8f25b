"""``ragsift evaluate --engine ray``: the same run as the local engine, scheduled by Ray Data.

The examples still to do (every compressor label x example not yet in its predictions file)
become a Ray Dataset; two ``map_batches`` stages run over actor pools:

1. **compress** (:class:`CompressStage`): each actor builds every compressor of the plan's config
   once (the include-resolved config itself travels: workers read no file) and compresses its rows, timed
   exactly as the local engine times them (``timed_compress``, warm-up runs first);
2. **read** (:class:`ReadStage`): each actor builds the reader and the metrics once, reads the
   compressed contexts of its batch together (``timed_read``; only positions below
   ``reader_limit``) and makes the same predictions record as the local engine (``make_record``).

Pool sizes, GPUs and CPUs per actor, batch size and fault tolerance come from
``[evaluation.ray]`` (:class:`~ragsift.evaluation.run.settings.RaySettings`). The driver writes each
record as it arrives, through the same flushed JSONL writer, skipping an id it already wrote, so
a batch that Ray retries after a crashed actor is written once; a run that fails anyway keeps
every finished example and ``--resume`` (with either engine) computes only the rest. The summary,
tests, Parquet files and report are then made by the local engine's code
(:func:`ragsift.evaluation.run.run_summary.summarise`). With ``cache = "run"`` (the default) actors share
RUN_DIR/cache, which on a cluster must be a shared file system (else use a shared folder or
``cache = "off"``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.config import RunConfig
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import PredictionWriter, read_records, record_json
from ragsift.evaluation.run.caches import attach_caches
from ragsift.evaluation.run.plan import RunPlan, build_plugins, make_record
from ragsift.evaluation.run.settings import EvaluationSettings
from ragsift.evaluation.run.timing import timed_compress, timed_read

__all__ = ["RayEngine", "check_ray", "evaluate_with_ray", "CompressStage", "ReadStage"]


#: the environment variable by which the user (not a config) lets ragsift join a Ray cluster
ADDRESS_ENV = "RAGSIFT_RAY_ADDRESS"


def cluster_address(settings: EvaluationSettings) -> str | None:
    """The Ray cluster to join, or None for a local Ray this run starts. Joining a cluster runs
    this process's pickled code there and reads what it sends back (Ray has no authentication),
    so a config alone may not choose one (issue 53, docs/threat-model.md): ``[evaluation.ray]
    address`` is used only when the user's environment names the same cluster in
    ``RAGSIFT_RAY_ADDRESS``, which alone also picks one."""
    configured = settings.ray.address
    chosen = os.environ.get(ADDRESS_ENV) or None
    if configured is not None and configured != chosen:
        raise ConfigError(f"[evaluation.ray] address = '{configured}' names a Ray cluster to join, and a config alone may "
                          f"not choose one (the run's code and data go there unauthenticated). Set {ADDRESS_ENV}="
                          f"'{configured}' in your environment to join it, or remove the address to start a local Ray.")
    return chosen


def check_ray(settings: EvaluationSettings) -> None:
    """Refuse ``--engine ray`` without Ray Data installed, or with a cluster named by the config
    alone (before a run directory is made)."""
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigError("--engine ray needs Ray Data: pip install 'ragsift[ray]' (or pip install 'ray[data]').") from None
    cluster_address(settings)


#: Ray Data logs a warning for every block whose column of examples (Python objects) it stores as
#: Ray-serialised objects rather than Arrow; that is the intended path here, not a problem
_QUIET_LOGGERS = ("ray.data._internal.tensor_extensions.arrow",)


#: Ray's own loggers, silenced (but errors) by ``--quiet``
_RAY_LOGGERS = ("ray", "ray.data", "ray.serve", "ray.train", "ray.tune")


def _quiet(everything: bool = False) -> None:
    """The intended-path warnings off; with ``everything`` (``-q``), Ray's own logging too."""
    for name in (*_QUIET_LOGGERS, *(_RAY_LOGGERS if everything else ())):
        logging.getLogger(name).setLevel(logging.ERROR)


def _plugins(config: RunConfig, no_reader: bool) -> tuple[EvaluationSettings, dict[str, Any], dict[str, str], Any, list[Any]]:
    _quiet()
    return build_plugins(config, no_reader)


class CompressStage:
    """A compress actor: builds the config's compressors once; each row is (label, example)."""

    def __init__(self, config: RunConfig, run_dir: str) -> None:
        from ragsift.evaluation.run import sweep as sw

        self.settings, self.compressors, families, _, _ = _plugins(config, no_reader=True)
        _, self.caches = attach_caches(self.compressors, None, self.settings.cache, Path(run_dir),
                                       share=sw.sweep_shares(families))
        self.warm: set[str] = set()

    def _warm_up(self, label: str, example: Any) -> None:
        compressor = self.compressors[label]
        compressor.warm_up()
        for _ in range(self.settings.warmup):  # untimed, storing nothing in the caches (as the local engine)
            with self.caches.read_only():
                compressor.compress(example)
        self.warm.add(label)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = []
        for label, example in zip(batch["label"], batch["example"], strict=True):
            if label not in self.warm:
                self._warm_up(str(label), example)
            results.append(timed_compress(self.compressors[str(label)], example, self.settings.repeats))
        out = dict(batch)
        out["result"] = _objects(results)
        return out


class ReadStage:
    """A read actor: builds the reader (if any) and the metrics once, reads a batch together and
    returns each row's predictions record as JSON text."""

    def __init__(self, config: RunConfig, run_dir: str, no_reader: bool) -> None:
        self.settings, _, _, reader, self.metrics = _plugins(config, no_reader)
        self.reader, self.caches = attach_caches({}, reader, self.settings.cache, Path(run_dir))
        self.reader_limit = self.settings.reader_limit
        self.warm = False

    def _warm_up(self, question: str, context: str) -> None:
        for metric in self.metrics:
            metric.warm_up()
        if self.reader is not None:
            self.reader.warm_up()
            if self.reader_limit != 0:
                for _ in range(self.settings.warmup):
                    with self.caches.read_only():
                        self.reader.answer_many([question], [context])
        self.warm = True

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        labels, examples, results = list(batch["label"]), list(batch["example"]), list(batch["result"])
        if not self.warm and examples:
            self._warm_up(examples[0].question, results[0].text)
        read = [i for i, p in enumerate(batch["position"])
                if self.reader is not None and (self.reader_limit is None or int(p) < self.reader_limit)]
        answers: list[Any] = [None] * len(examples)
        seconds: list[float | None] = [None] * len(examples)
        if read:
            got, took = timed_read(self.reader, [examples[i].question for i in read], [results[i].text for i in read],
                                   self.settings.repeats)
            for i, reply, s in zip(read, got, took, strict=True):
                answers[i], seconds[i] = reply, s
        records = [make_record(str(label), ex, result, answer, secs, self.metrics)
                   for label, ex, result, answer, secs in zip(labels, examples, results, answers, seconds, strict=True)]
        return {"label": np.array([str(label) for label in labels]), "id": np.array([ex.id for ex in examples]),
                "record": np.array([record_json(r) for r in records])}


def _objects(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _pool(size: int | tuple[int, int]) -> Any:
    from ray.data import ActorPoolStrategy

    if isinstance(size, int):
        return ActorPoolStrategy(size=size)
    return ActorPoolStrategy(min_size=size[0], max_size=size[1])


#: a line of Ray's C++ core as its logger writes it to stderr, for example
#: "[2026-12-06 06:11:04,649 E 15538 15538] core_worker.cc:2465: Actor with class name: ..."
RAY_CORE_LINE = re.compile(rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [TDIWEF] \d+ \d+\] [\w./-]+\.(?:cc|h):\d+: ")


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


@contextlib.contextmanager
def without_ray_core_lines() -> Iterator[None]:
    """``-q``: drop the lines Ray's C++ core writes to this process's stderr; pass everything else.

    The core worker sends its ERROR lines to file descriptor 2 whatever ``logging_level`` says
    (ray-project/ray#18577), and Ray Data's actor pools make one on every run ("constructor arguments
    in the object store and max_restarts > 0", ray-project/ray#53727): not an error of ragsift's, and
    also in Ray's own session log files. ``RAY_BACKEND_LOG_LEVEL=fatal`` would stop it but prints a
    line of its own, so stderr goes through a pipe whose reader forwards every other line."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no file descriptor 2 to filter
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        with open(read_end, "rb") as pipe:
            for line in pipe:  # until every writer (this process, Ray's children) has closed it
                if not RAY_CORE_LINE.match(line):
                    with contextlib.suppress(OSError):
                        _write_all(saved, line)

    reader = threading.Thread(target=forward, name="ragsift-ray-stderr", daemon=True)
    reader.start()
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stderr.flush()
        os.dup2(saved, 2)  # stderr is itself again; the pipe ends when Ray's processes have gone too
        reader.join(timeout=5)
        if not reader.is_alive():
            os.close(saved)


def _start_ray(address: str | None, quiet: bool = False) -> bool:
    """Join or start Ray; True when this call started it (and so stops it at the end). ``quiet``
    (``-q``): only errors from Ray itself, and the workers' own output is not forwarded."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR if quiet else logging.WARNING,
             log_to_driver=not quiet)
    return True


class RayEngine:
    """``--engine ray``: the :class:`~ragsift.evaluation.run.engines.Engine` of a Ray Data pipeline."""

    def check(self, plan: RunPlan) -> None:
        check_ray(plan.settings)

    def run(self, plan: RunPlan, run_dir: Path, paths: Mapping[str, Path]) -> dict[str, Any]:
        return evaluate_with_ray(plan, run_dir, paths, plan.options.progress)


def evaluate_with_ray(plan: RunPlan, run_dir: Path, paths: Mapping[str, Path], progress: bool) -> dict[str, Any]:
    """Compress, read and record every example of ``plan`` not yet in ``paths``; returns what the
    manifest records about the engine."""
    import ray
    from tqdm import tqdm

    settings = plan.settings
    rs = settings.ray
    done = {label: {str(r["id"]) for r in read_records(paths[label])} for label in plan.labels}  # repairs a cut line
    rows = [{"label": label, "position": plan.positions[ex.id], "example": ex}
            for label in plan.labels for ex in plan.subsets[label] if ex.id not in done[label]]
    report: dict[str, Any] = {"engine": "ray", "rows": len(rows), "settings": rs.model_dump(mode="json")}
    if not rows:
        return report
    filtered = contextlib.ExitStack()
    if not progress:  # -q: Ray's C++ core lines too (from Ray's start to its shutdown)
        filtered.enter_context(without_ray_core_lines())
    try:
        started = _start_ray(cluster_address(settings), quiet=not progress)
    except BaseException:
        filtered.close()
        raise
    _quiet(everything=not progress)
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = progress
        if not progress:  # -q: no "Starting execution of Dataset ..." lines either
            context.print_on_execution_start = False
            context.enable_auto_log_stats = False
        batch = rs.batch_size or settings.batch_size
        config = RunConfig.from_table(plan.config.table(), plan.config.source)  # the resolved table, no file text
        # Ray Data's own defaults are -1 (restart and retry without end); only a finite choice is passed
        retry: dict[str, Any] = {k: v for k, v in (("max_restarts", rs.max_restarts),
                                                   ("max_task_retries", rs.max_task_retries)) if v != -1}
        dataset = ray.data.from_items(rows, override_num_blocks=min(len(rows), 64))
        compressed = dataset.map_batches(
            CompressStage, fn_constructor_kwargs={"config": config, "run_dir": str(run_dir)},
            batch_size=batch, compute=_pool(rs.pool("compress")), num_cpus=rs.compress_cpus, num_gpus=rs.compress_gpus,
            **retry)
        recorded = compressed.map_batches(
            ReadStage, fn_constructor_kwargs={"config": config, "run_dir": str(run_dir),
                                              "no_reader": plan.no_reader},
            batch_size=batch, compute=_pool(rs.pool("read")), num_cpus=rs.read_cpus, num_gpus=rs.read_gpus, **retry)
        written = 0
        bar = tqdm(total=len(rows), desc="evaluate [ray]", unit="ex", disable=not progress, file=sys.stderr)
        with contextlib.ExitStack() as stack:
            writers = {label: stack.enter_context(PredictionWriter(paths[label])) for label in plan.labels}
            for row in recorded.iter_rows():
                label, example_id = str(row["label"]), str(row["id"])
                if example_id in done[label]:  # a retried batch: the record is already written
                    continue
                writers[label].write(json.loads(row["record"]))
                done[label].add(example_id)
                written += 1
                bar.update(1)
        bar.close()
        report["written"] = written
        return report
    finally:
        try:
            if started:
                ray.shutdown()
        finally:
            filtered.close()
