"""``ragsift serve`` under load: many requests in flight at once, every answer checked.

Starts ``ragsift serve --config CONFIG --port 0`` (a free loopback port), sends ``--requests``
POST /compress requests, ``--concurrency`` of them in flight at a time (httpx AsyncClient), each
one example of the bundled HotpotQA sample under its own id, and checks every answer against the
record ``ragsift compress`` writes for that example with the same config (timings aside): no
error, nothing lost, no answer given to the wrong request. Reports throughput, latency and how
the service batched the requests.

    python benchmarks/serve_load.py --config bm25 --requests 600 --concurrency 300 --write BENCHMARKS.md

The sample is only the input here (nothing is tuned on it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## ragsift serve under load"
_READY = re.compile(r"ready on (http://\S+)")

__all__ = ["Service", "serve", "compress_records", "request_body", "run_load", "check_answers", "main"]


@dataclass
class Service:
    process: subprocess.Popen  # type: ignore[type-arg]
    base_url: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextmanager
def serve(config: str, log: Path, args: Sequence[str] = (), env: dict[str, str] | None = None,
          ready_within_s: float = 300) -> Iterator[Service]:
    """``ragsift serve`` on a free loopback port for the block (its output in ``log``); always stopped."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    command = [sys.executable, "-m", "ragsift.cli", "serve", "--config", config, "--port", "0", "--log-level", "warning", *args]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=ROOT)
    service = Service(process, "", log)
    try:
        deadline = time.monotonic() + ready_within_s
        while not service.base_url:
            found = _READY.search(log.read_text())
            if found:
                service.base_url = found.group(1)
            elif process.poll() is not None:
                raise RuntimeError(f"ragsift serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            elif time.monotonic() > deadline:
                raise RuntimeError(f"ragsift serve not ready after {ready_within_s} s:\n{log.read_text()[-3000:]}")
            else:
                time.sleep(0.1)  # polling for readiness, not a fixed wait
        yield service
    finally:
        service.stop()


def compress_records(config: str, limit: int) -> list[dict[str, Any]]:
    """What ``ragsift compress --config CONFIG --limit LIMIT`` writes (the bundled sample), one record per example."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "ragsift.cli", "compress", "--config", config, "--limit", str(limit), "-q"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, cwd=ROOT, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"ragsift compress failed ({done.returncode}): {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def request_body(example: Any, id: str | None = None) -> dict[str, Any]:
    """The one-example request of an :class:`~ragsift.types.Example` (its documents whole)."""
    docs = []
    for doc in example.documents:
        item: dict[str, Any] = {"title": doc.title, "text": doc.text, "id": doc.id}
        if doc.score is not None:
            item["score"] = doc.score
        if doc.sentence_spans is not None:
            item["sentence_spans"] = [list(span) for span in doc.sentence_spans]
        docs.append(item)
    return {"id": example.id if id is None else id, "question": example.question, "documents": docs}


def comparable_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between two runs or is one side's alone: its timings, the
    document ids the service echoes (``ragsift compress`` records have none) and the question
    ``ragsift compress`` writes (the service's client sent it)."""
    return {k: v for k, v in record.items() if k not in ("timings", "document_ids", "question")}


@dataclass
class LoadReport:
    requests: int
    concurrency: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    answers: list[tuple[int, Any]] = field(default_factory=list)  # (status, JSON body) per request, in request order
    max_in_flight: int = 0

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


async def _load(base_url: str, bodies: Sequence[dict[str, Any]], concurrency: int, token: str | None,
                request_timeout_s: float) -> LoadReport:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    gate = asyncio.Semaphore(concurrency)
    report = LoadReport(len(bodies), concurrency, 0.0, [0.0] * len(bodies), [(0, None)] * len(bodies))
    in_flight = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits, timeout=request_timeout_s) as client:
        async def one(i: int, body: dict[str, Any]) -> None:
            nonlocal in_flight
            async with gate:
                in_flight += 1
                report.max_in_flight = max(report.max_in_flight, in_flight)
                t = time.perf_counter()
                try:
                    response = await client.post("/compress", json=body)
                    report.answers[i] = (response.status_code, response.json())
                except (httpx.HTTPError, ValueError) as exc:
                    report.answers[i] = (-1, f"{type(exc).__name__}: {exc}")
                finally:
                    report.latencies[i] = time.perf_counter() - t
                    in_flight -= 1

        start = time.perf_counter()
        await asyncio.gather(*(one(i, body) for i, body in enumerate(bodies)))
        report.seconds = time.perf_counter() - start
    return report


def run_load(base_url: str, bodies: Sequence[dict[str, Any]], concurrency: int, token: str | None = None,
             total_timeout_s: float = 600, request_timeout_s: float = 300) -> LoadReport:
    """Send every body once, ``concurrency`` at a time; the whole run is cut at ``total_timeout_s``."""
    return asyncio.run(asyncio.wait_for(_load(base_url, bodies, concurrency, token, request_timeout_s), total_timeout_s))


def check_answers(report: LoadReport, bodies: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> list[str]:
    """Every problem: a failed request, a lost or extra result, a result for another request."""
    problems = []
    for i, ((status, answer), body, want) in enumerate(zip(report.answers, bodies, expected, strict=True)):
        if status != 200:
            problems.append(f"request {i} ({body['id']}): status {status}: {str(answer)[:200]}")
            continue
        results = answer.get("results", [])
        if len(results) != 1:
            problems.append(f"request {i} ({body['id']}): {len(results)} results for one example")
            continue
        got = comparable_record(results[0])
        if got != {**comparable_record(want), "id": body["id"]}:
            problems.append(f"request {i} ({body['id']}): answer is not the one of its example (got id {got.get('id')!r}, "
                            f"kept {got.get('kept')}, expected kept {want.get('kept')})")
    return problems


def _load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="bm25")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--examples", type=int, default=20, help="distinct examples of the bundled sample, cycled")
    parser.add_argument("--max-batch-examples", type=int, default=32)
    parser.add_argument("--keep-alive", type=float, help="the service's --keep-alive (default: its own)")
    parser.add_argument("--write", type=Path, help="write the result as its section of this BENCHMARKS.md")
    args = parser.parse_args(argv)

    from ragsift.datasets import load_examples

    examples = list(load_examples(None, limit=args.examples))
    records = compress_records(args.config, args.examples)
    assert [r["id"] for r in records] == [e.id for e in examples]
    bodies = [request_body(examples[i % len(examples)], id=f"load-{i}") for i in range(args.requests)]
    expected = [records[i % len(records)] for i in range(args.requests)]
    token = "benchmark-token"
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"ragsift-serve-load-{os.getpid()}.log"
    load_before = _load_average()
    options = ["--max-batch-examples", str(args.max_batch_examples)]
    if args.keep_alive is not None:
        options += ["--keep-alive", str(args.keep_alive)]
    with serve(args.config, log, options, env={"RAGSIFT_SERVE_TOKEN": token}) as service:
        report = run_load(service.base_url, bodies, args.concurrency, token)
        import httpx

        health = httpx.get(f"{service.base_url}/health", timeout=30).json()
    problems = check_answers(report, bodies, expected)
    lat = sorted(report.latencies)
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    queue = health["queue"]
    lines = [
        f"`python benchmarks/serve_load.py --config {args.config} --requests {args.requests} --concurrency {args.concurrency} "
        f"--examples {args.examples} --max-batch-examples {args.max_batch_examples}"
        f"{f' --keep-alive {args.keep_alive:g}' if args.keep_alive is not None else ''}{' --write BENCHMARKS.md' if args.write else ''}`",
        "",
        f"{args.requests} POST /compress requests (one example each: {args.examples} distinct examples of the bundled "
        f"sample, cycled, each under its own id), up to {args.concurrency} in flight (max reached {report.max_in_flight}); "
        f"compressor `{args.config}`; one `ragsift serve` process (uvicorn, one worker thread compressing) on 127.0.0.1, "
        f"client (httpx AsyncClient) in another process on the same machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"1-minute load average {load_before} before the run and {_load_average()} after (the machine is shared: times are rough).",
        "",
        "| requests | errors | wrong or lost answers | wall (s) | requests/s | latency p50 (s) | p95 (s) | max (s) | batches "
        "| largest batch |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {args.requests} | {sum(s != 200 for s, _ in report.answers)} | {len(problems)} | {report.seconds:.2f} | "
        f"{report.per_second:.1f} | {statistics.median(lat):.2f} | {p95:.2f} | {lat[-1]:.2f} | {queue['batches']} | "
        f"{queue['largest_batch']} |",
        "",
        "Every answer was checked against `ragsift compress` output for its example (timings aside).",
    ]
    text = "\n".join(lines)
    print(text)
    for problem in problems[:20]:
        print("PROBLEM:", problem, file=sys.stderr)
    if args.write:
        sys.path.insert(0, str(Path(__file__).parent))
        from markdown_section import write_section

        write_section(args.write, SECTION, text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
