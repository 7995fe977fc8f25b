"""``ragsift evaluate --engine ray`` on a local Ray instance (CPU only, 2 CPUs): the records equal
the local engine's although a worker dies mid-run, every example is written once, and a resumed
run computes only what is missing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from cli_process import REPO

from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import read_records
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
from ragsift.registry import reset_registry

pytestmark = pytest.mark.slow

CONFIG = """
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
[compressors.bm25.scorer]
name = "counting-bm25"
[compressors.embedding]
name = "embedding"
[reader]
name = "counting"
[evaluation]
limit = 4
reader_limit = 3
warmup = 1
cache = "off"
bootstrap_samples = 200
metrics = ["evidence", "answer-retention", "exact-match", "f1", "empty"]
[evaluation.ray]
compress_cpus = 1
read_cpus = 1
batch_size = 2
"""


@pytest.fixture(scope="module")
def ray_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A local Ray instance with 2 CPUs whose workers register the counting test plugins, log
    every scorer call, and where the first compress actor to reach its second call dies."""
    import counting_plugins

    root = tmp_path_factory.mktemp("ray")
    files = {"root": root, "marker": root / "killed", "log": root / "scored.log"}
    assert not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", runtime_env={
        "env_vars": {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
                     "COUNTING_SCORER_EXIT_ONCE": str(files["marker"]), "COUNTING_SCORER_LOG": str(files["log"]),
                     "TQDM_DISABLE": "1"},
        "worker_process_setup_hook": "counting_plugins.install",
    })
    counting_plugins.install()
    try:
        yield files
    finally:
        ray.shutdown()
        reset_registry()


def _run(config: Path, out: Path, engine: str, **kw: object) -> dict:  # type: ignore[type-arg]
    return run_evaluation(RunOptions(config=config, out=out, engine=engine, progress=False, echo=lambda _: None, **kw))  # type: ignore[arg-type]


def _stable(record: dict) -> dict:  # type: ignore[type-arg]
    """A record without what is measured in seconds, and without its sentence scores."""
    out = {k: v for k, v in record.items() if k != "timings"}
    out["sentences"] = [{k: v for k, v in s.items() if k != "score"} for s in record["sentences"]]
    return out


def _scores(record: dict) -> list[float | None]:  # type: ignore[type-arg]
    return [s["score"] for s in record["sentences"]]


def _assert_same(remote: list[dict], local: list[dict]) -> None:  # type: ignore[type-arg]
    """Every field equal; the dual encoder's float32 scores to 1e-5 (a Ray actor with one CPU runs
    torch on one thread, this process on two: sums are added in another order)."""
    by_id = {r["id"]: r for r in remote}
    assert [_stable(by_id[r["id"]]) for r in local] == [_stable(r) for r in local]
    for r in local:
        got, want = _scores(by_id[r["id"]]), _scores(r)
        assert [g is None for g in got] == [w is None for w in want]
        assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None], abs=1e-5)


def _summary(run_dir: Path) -> dict:  # type: ignore[type-arg]
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.pop("run_dir")
    for entry in summary["compressors"].values():
        entry.pop("latency_ms")
    return summary


def test_ray_engine_matches_the_local_engine_although_a_worker_dies(ray_env: dict[str, Path]) -> None:
    root = ray_env["root"]
    config = root / "ray.toml"
    config.write_text(CONFIG)
    _run(config, root / "local", "local")
    ray_env["log"].unlink(missing_ok=True)
    _run(config, root / "ray", "ray", parquet=True)

    assert ray_env["marker"].is_file()  # a compress actor died (os._exit) in the middle of the run
    pid, example_id = ray_env["marker"].read_text().split()
    assert int(pid) != os.getpid()  # in a Ray worker, not in this process
    for label in ("none", "bm25", "embedding"):
        local = read_records(root / "local" / "predictions" / f"{label}.jsonl")
        remote = read_records(root / "ray" / "predictions" / f"{label}.jsonl")
        ids = [r["id"] for r in remote]
        assert len(ids) == len(set(ids)) == 4  # every example exactly once
        _assert_same(remote, local)
        assert sum(r["prediction"] is not None for r in remote) == 3  # reader_limit counts positions
    assert _summary(root / "ray") == _summary(root / "local")
    manifest = json.loads((root / "ray" / "manifest.json").read_text())
    assert manifest["run"]["engine"] == "ray" and manifest["status"] == "complete"
    assert manifest["caches"]["engine"] == "ray" and manifest["caches"]["written"] == 12
    assert (root / "ray" / "predictions" / "bm25.parquet").is_file()


def test_resume_after_a_failure_computes_only_the_missing_examples(ray_env: dict[str, Path]) -> None:
    root = ray_env["root"]
    config = root / "ray.toml"
    if not (root / "ray").exists():
        pytest.fail("needs the run of the test above")
    run = root / "resumed"
    import shutil

    shutil.copytree(root / "ray", run)
    path = run / "predictions" / "bm25.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    kept = lines[:2]
    path.write_text("".join(kept) + lines[2][: len(lines[2]) // 2])  # killed in the middle of a write
    ray_env["log"].unlink(missing_ok=True)
    _run(config, run, "ray", resume=True)
    scored = [line.split()[0] for line in ray_env["log"].read_text().splitlines()]
    missing = [json.loads(line)["id"] for line in lines[2:]]
    # the two missing examples, each scored once (plus one untimed warm-up call on the first of them)
    assert sorted(set(scored)) == sorted(missing) and len(scored) == len(missing) + 1
    records = read_records(path)
    assert sorted(r["id"] for r in records) == sorted(json.loads(line)["id"] for line in lines)
    assert path.read_text().splitlines(keepends=True)[:2] == kept  # untouched, byte for byte (checksums too)
    assert all("checksum" in json.loads(line) for line in path.read_text().splitlines())  # the driver's writes too
    assert _summary(run) == _summary(root / "ray")


def test_a_config_with_an_included_reader_and_compressor_runs_under_ray_as_locally(ray_env: dict[str, Path]) -> None:
    """The plan carries the include-resolved config to the actors (before, they rebuilt it from the
    top file's text, which skips ``include``: the config model refused the leftover key)."""
    root = ray_env["root"] / "includes"
    root.mkdir()
    (root / "reader.toml").write_text('[reader]\nname = "counting"\n[evaluation]\nwarmup = 0\ncache = "off"\n'
                                      'bootstrap_samples = 100\nmetrics = ["evidence", "exact-match", "empty"]\n'
                                      '[evaluation.ray]\ncompress_cpus = 1\nread_cpus = 1\nbatch_size = 1\n')
    (root / "bm25.toml").write_text('[compressor]\nname = "bm25"\n[compressor.selector]\nk = 2\n')
    config = root / "run.toml"
    config.write_text('include = ["reader.toml"]\n[compressors.none]\nname = "none"\n'
                      '[compressors.bm25]\ninclude = "bm25.toml"\n')
    _run(config, root / "local", "local", limit=2)
    _run(config, root / "ray", "ray", limit=2)
    for label in ("none", "bm25"):
        local = read_records(root / "local" / "predictions" / f"{label}.jsonl")
        remote = read_records(root / "ray" / "predictions" / f"{label}.jsonl")
        assert len(local) == 2 and all(r["prediction"] is not None for r in local)  # the included reader read them
        _assert_same(remote, local)
    assert all(sum(s["kept"] for s in r["sentences"]) == 2
               for r in read_records(root / "ray" / "predictions" / "bm25.jsonl"))  # the included k = 2
    manifest = json.loads((root / "ray" / "manifest.json").read_text())
    assert manifest["config"]["resolved"]["reader"] == {"name": "counting"}
    assert manifest["config"]["resolved"]["compressors"]["bm25"] == {"name": "bm25", "selector": {"k": 2}}


def test_ray_settings_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[compressor]\nname = "bm25"\n[evaluation.ray]\ncompress_actors = [3, 1]\n')
    with pytest.raises(ConfigError, match=r"compress_actors"):
        _run(config, tmp_path / "run", "ray")
    config.write_text('[compressor]\nname = "bm25"\n[evaluation.ray]\nread_gpu = 1\n')
    with pytest.raises(ConfigError, match="read_gpu"):
        _run(config, tmp_path / "run", "ray")
    assert not (tmp_path / "run").exists()


def test_quiet_silences_rays_own_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24, case 13: with -q, Ray starts logging errors only and forwards no worker output,
    and Ray's own loggers are set to errors only (checked without starting Ray)."""
    import logging

    from ragsift.evaluation.run.engines import ray as ray_engine

    calls: list[dict] = []  # type: ignore[type-arg]
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    for name in ("ray", "ray.data"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.INFO)
    assert ray_engine._start_ray(None, quiet=True)
    assert calls[-1]["logging_level"] == logging.ERROR and calls[-1]["log_to_driver"] is False
    ray_engine._quiet(everything=True)
    assert logging.getLogger("ray").level == logging.ERROR and logging.getLogger("ray.data").level == logging.ERROR
    assert ray_engine._start_ray(None, quiet=False)
    assert calls[-1]["logging_level"] == logging.WARNING and calls[-1]["log_to_driver"] is True
