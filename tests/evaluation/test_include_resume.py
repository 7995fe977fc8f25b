"""A run records the files its config includes, and --resume refuses when one of them changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.errors import ConfigError
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

HOTPOT = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"


def _run(config: Path, out: Path, resume: bool = False) -> dict:
    return run_evaluation(RunOptions(config=config, out=out, limit=2, resume=resume, no_reader=True,
                                     progress=False, echo=lambda _: None))


def test_resume_refuses_a_changed_included_file(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n[evaluation]\nwarmup = 0\n'
                    'metrics = ["evidence", "empty"]\n')
    config = tmp_path / "run.toml"
    config.write_text('include = ["base.toml"]\n[compressors.bm25]\nname = "bm25"\n')
    out = tmp_path / "run"
    _run(config, out)
    manifest = json.loads((out / "manifest.json").read_text())
    (included,) = manifest["config"]["includes"]
    assert included["path"] == str(base.resolve()) and included["text"] == base.read_text()
    assert len(included["sha256"]) == 64
    _run(config, out, resume=True)  # unchanged: resumes (nothing left to do)
    base.write_text(base.read_text().replace("warmup = 0", "warmup = 1"))
    with pytest.raises(ConfigError, match=r"cannot resume: a file the config includes changed \(.*base\.toml: sha256 "):
        _run(config, out, resume=True)


@pytest.mark.slow
def test_shards_of_a_config_with_includes_merge(tmp_path):
    from ragsift.cli import main

    base = tmp_path / "configs" / "base.toml"
    base.parent.mkdir()
    base.write_text('[evaluation]\nwarmup = 0\nbootstrap_samples = 100\nmetrics = ["evidence", "empty"]\n')
    config = tmp_path / "configs" / "run.toml"
    config.write_text('include = ["base.toml"]\n[compressors.bm25]\nname = "bm25"\n')
    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, out in enumerate(shards):
        assert main(["evaluate", "-c", str(config), "--no-reader", "-q", "--limit", "4", "--shard", f"{i}/2",
                     "--out", str(out)]) == 0
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    assert json.loads((tmp_path / "merged" / "summary.json").read_text())["compressors"]["bm25"]["n"] == 4
    # merge plans the run from the config the shards recorded (include-resolved), reading no config
    # file: an included file edited since the shards ran (another bootstrap seed) changes nothing
    base.write_text(base.read_text() + "seed = 1\n")
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged2")]) == 0

    def summary(run: str) -> dict:
        out = json.loads((tmp_path / run / "summary.json").read_text())
        out.pop("run_dir")
        return out

    assert summary("merged2") == summary("merged")
    assert (tmp_path / "merged2" / "config.toml").read_bytes() == config.read_bytes()


def test_resume_accepts_a_file_that_two_compressors_include(tmp_path):
    """Two compressors including the same file record it twice; an unchanged run resumes, an edit refuses."""
    shared = tmp_path / "bm25.toml"
    shared.write_text('[compressors.bm25]\nname = "bm25"\n[compressors.bm25.selector]\nname = "top-k"\nk = 2\n'
                      '[compressors.bm25-top3]\nname = "bm25"\n[compressors.bm25-top3.selector]\nname = "top-k"\nk = 3\n')
    config = tmp_path / "run.toml"
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n[evaluation]\nwarmup = 0\n'
                      'metrics = ["evidence", "empty"]\n'
                      '[compressors.bm25]\ninclude = "bm25.toml"\n'
                      '[compressors.bm25-top3]\ninclude = "bm25.toml"\n')
    out = tmp_path / "run"
    _run(config, out)
    paths = [i["path"] for i in json.loads((out / "manifest.json").read_text())["config"]["includes"]]
    assert paths.count(str(shared.resolve())) == 2
    _run(config, out, resume=True)  # unchanged: resumes
    shared.write_text(shared.read_text().replace("k = 2", "k = 1"))
    with pytest.raises(ConfigError, match=r"a file the config includes changed \(.*bm25\.toml: sha256 [0-9a-f]{12}"):
        _run(config, out, resume=True)


def test_a_run_moved_with_its_configs_to_another_folder_resumes(tmp_path):
    """A long run continues on another machine or checkout: the included files are compared
    relative to the config's folder, not by their absolute paths."""
    import shutil

    first = tmp_path / "first"
    first.mkdir()
    (first / "base.toml").write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n[evaluation]\nwarmup = 0\n'
                                     'metrics = ["evidence", "empty"]\n')
    (first / "run.toml").write_text('include = ["base.toml"]\n[compressors.bm25]\nname = "bm25"\n')
    _run(first / "run.toml", first / "out")
    moved = tmp_path / "moved"
    shutil.copytree(first, moved)
    resumed = run_evaluation(RunOptions(config=moved / "run.toml", out=moved / "out", limit=3, resume=True,
                                        no_reader=True, progress=False, echo=lambda _: None))
    assert resumed["examples"] == 3
    (moved / "base.toml").write_text((moved / "base.toml").read_text().replace("warmup = 0", "warmup = 1"))
    with pytest.raises(ConfigError, match="a file the config includes changed"):  # a change is still refused
        _run(moved / "run.toml", moved / "out", resume=True)
