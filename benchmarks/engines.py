"""Throughput of the local and the Ray engine of ``ragsift evaluate`` on the same job.

The same config (BM25 and MiniLM-embedding compressors, evidence / tokens / empty metrics, no
reader, caches off) on the same first N examples of the bundled HotpotQA sample, run end to end
in this process: ``run_evaluation`` with ``engine="local"``, then with ``engine="ray"`` on a local
Ray instance (``ray.init(num_cpus=...)``, started and timed separately), then locally again (the
first local run also pays this process's imports and cold file caches). Examples/s counts
compressor x example records per second of wall time, model loading, summary and report included.
The two runs' records are compared: the same kept sentences and metrics for every example, scores
within 1e-5 (asserted).

    python benchmarks/engines.py --examples 30 --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from markdown_section import write_section  # noqa: E402

SECTION = "## Ray engine (local vs --engine ray, same job)"

CONFIG = """
[compressors.bm25]
name = "bm25"
[compressors.embedding]
name = "embedding"
[evaluation]
limit = {examples}
warmup = 1
cache = "off"
bootstrap_samples = 200
metrics = ["evidence", "tokens", "empty"]
[evaluation.ray]
compress_actors = {actors}
read_actors = 1
compress_cpus = 1
read_cpus = 0.5
batch_size = {batch}
"""


def _records(run: Path) -> dict[tuple[str, str], dict]:  # type: ignore[type-arg]
    out = {}
    for path in sorted((run / "predictions").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            out[(r["compressor"], r["id"])] = r
    return out


def _check_same(local: Path, remote: Path) -> int:
    a, b = _records(local), _records(remote)
    assert a.keys() == b.keys(), "the engines wrote different examples"
    for key, r in a.items():
        s = b[key]
        assert r["kept"] == s["kept"] and r["metrics"] == s["metrics"], f"{key}: the engines disagree"
        for x, y in zip(r["sentences"], s["sentences"], strict=True):
            assert (x["score"] is None) == (y["score"] is None)
            assert x["score"] is None or abs(x["score"] - y["score"]) <= 1e-5, f"{key}: scores differ"
    return len(a)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of every process below it, with what those
    have reaped (Ray's raylet reaps the actors that Ray Data stops when a stage is done)."""
    import psutil

    total = 0.0
    for proc in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # exited in between
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=30)
    parser.add_argument("--actors", type=int, default=1, help="compress actors of the Ray engine")
    parser.add_argument("--ray-cpus", type=int, default=2, help="num_cpus of the local Ray instance")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--write", type=Path, help="write the section into this Markdown file")
    args = parser.parse_args(argv)

    import ray

    from ragsift.evaluation.run.runner import RunOptions, run_evaluation

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "engines.toml"
        config.write_text(CONFIG.format(examples=args.examples, actors=args.actors, batch=args.batch_size))
        load_before = os.getloadavg()[0]
        seconds, cpu = {}, {}
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        run_evaluation(RunOptions(config=config, out=Path(tmp) / "local", progress=False, echo=lambda _: None))
        seconds["local"], cpu["local"] = time.perf_counter() - start, _cpu_seconds() - cpu_start
        cpu_start = _cpu_seconds()
        start = time.perf_counter()
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, logging_level="WARNING")
        seconds["ray.init"] = time.perf_counter() - start
        try:
            start = time.perf_counter()
            run_evaluation(RunOptions(config=config, out=Path(tmp) / "ray", engine="ray", progress=False,
                                      echo=lambda _: None))
            seconds["ray"] = time.perf_counter() - start
            cpu["ray"] = _cpu_seconds() - cpu_start  # before shutdown: Ray's processes are still there to ask
        finally:
            ray.shutdown()
        start, cpu_start = time.perf_counter(), _cpu_seconds()  # again: the first run paid this process's imports
        run_evaluation(RunOptions(config=config, out=Path(tmp) / "local-again", progress=False, echo=lambda _: None))
        seconds["local, again"], cpu["local, again"] = time.perf_counter() - start, _cpu_seconds() - cpu_start
        load_after = os.getloadavg()[0]
        records = _check_same(Path(tmp) / "local", Path(tmp) / "ray")

    command = (f"python benchmarks/engines.py --examples {args.examples} --actors {args.actors} --ray-cpus {args.ray_cpus} "
               f"--batch-size {args.batch_size}")
    rows = [
        ("local", seconds["local"], "-"),
        ("ray", seconds["ray"], f"{seconds['ray.init']:.1f}"),
        ("local, again", seconds["local, again"], "-"),
    ]
    lines = [
        f"`{command} --write BENCHMARKS.md`",
        "",
        f"{args.examples} examples of the bundled HotpotQA sample x 2 compressors (bm25, embedding: MiniLM-L6) = "
        f"{records} records, no reader, caches off, warm-up 1, batch size {args.batch_size}; Ray: "
        f"{args.actors} compress actor(s) (1 CPU each), 1 read/metrics actor (0.5 CPU), `ray.init(num_cpus={args.ray_cpus})`; "
        f"{platform.machine()}, {os.cpu_count()} cores, 1-minute load average {load_before:.1f} before and "
        f"{load_after:.1f} after (other processes share the CPU: times are noisy). Wall time of `run_evaluation` "
        "end to end (model loading, summary, report included); CPU time: user + system seconds of this process "
        "and every process below it (for Ray: from ray.init to the end of the run, every Ray process and the actors "
        "they reaped included); the engines' "
        "records are asserted equal (kept sentences, metrics; scores within 1e-5).",
        "",
        "| run (in this order) | wall time (s) | examples/s | records/s | ray.init (s) | CPU time (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {name} | {wall:.1f} | {args.examples / wall:.3f} | {records / wall:.3f} | {init} | {cpu[name]:.1f} |"
              for name, wall, init in rows]
    best_local = min(seconds["local"], seconds["local, again"])
    lines += ["", f"Ray / faster local run, wall time: {seconds['ray'] / best_local:.2f}x "
              f"({(seconds['ray'] + seconds['ray.init']) / best_local:.2f}x with ray.init)."]
    body = "\n".join(lines)
    print(SECTION + "\n\n" + body)
    if args.write:
        write_section(args.write, SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
