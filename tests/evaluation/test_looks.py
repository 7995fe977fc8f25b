"""Sequential looks at the declared primary comparison: the run reads look by look (the first
fraction of each dataset), records each look in the manifest, stops at a crossed boundary or
pauses with --until-look and resumes at the next look; designs it cannot follow are refused
before anything is written."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from openai_fakes import fake_openai_server

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.evaluation.report.formatting import primary_lines
from ragsift.evaluation.run.looks import look_examples
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

SAMPLE = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"


def _config(tmp: Path, base_url: str, primary: str) -> Path:
    config = tmp / "looks.toml"
    config.write_text(f"""
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
[reader]
name = "openai"
base_url = "{base_url}"
model = "fake"
max_retries = 0
[evaluation]
warmup = 0
bootstrap_samples = 200
[evaluation.primary]
{primary}
""", encoding="utf-8")
    return config


def _split(tmp: Path) -> str:
    records = json.loads(SAMPLE.read_text(encoding="utf-8"))
    a, b = tmp / "a.json", tmp / "b.json"
    a.write_text(json.dumps(records[:4]), encoding="utf-8")
    b.write_text(json.dumps(records[4:8]), encoding="utf-8")
    return f"{a},{b}"


def _answer(gold: dict[str, str]):  # type: ignore[no-untyped-def]
    def answer(body: dict[str, Any]) -> str:
        question = body["messages"][-1]["content"].removeprefix("Query: ").removesuffix("\nAnswer:")
        context = " ".join(m["content"] for m in body["messages"][:-1])
        return gold[question] if gold[question].lower() in context.lower() else "I do not know"
    return answer


def _run(config: Path, out: Path, data: str, **kw: Any) -> Any:
    return run_evaluation(RunOptions(config=config, out=out, data=data, progress=False, echo=lambda _: None, **kw))


def test_look_examples_take_the_first_fraction_of_each_dataset():
    examples = [ex for ex in load_examples(SAMPLE, limit=7)]
    tagged = [type(ex)(ex.id, ex.question, ex.answers, ex.documents, ex.evidence,
                       {"dataset": "a" if i < 4 else "b"}) for i, ex in enumerate(examples)]
    assert [ex.id for ex in look_examples(tagged, 0.5)] == [tagged[i].id for i in (0, 1, 4, 5)]
    assert len(look_examples(tagged, 0.25)) == 1 + 1  # ceil(1.0) of a, ceil(0.75) of b
    assert len(look_examples(tagged, 1.0)) == 7
    assert len(look_examples(examples, 0.5)) == math.ceil(3.5)


def test_a_run_pauses_after_a_look_records_it_and_resumes_at_the_next(tmp_path):
    data = _split(tmp_path)
    gold = {ex.question: ex.answers[0] for ex in load_examples(SAMPLE, limit=8)}
    primary = ('compressor = "bm25"\ntest = "non-inferiority-then-superiority"\nmargin = 3.0\n'
               'looks = [0.5, 1.0]\nmax_n = 8\n')
    with fake_openai_server([200], _answer(gold), count_words=True) as server:
        config = _config(tmp_path, server.base_url, primary)
        out = tmp_path / "run"
        first = _run(config, out, data, until_look=1)
        manifest = json.loads((out / "manifest.json").read_text())
        seq = manifest["sequential"]
        assert seq["looks_done"] == 1 and len(seq["looks"]) == 1 and seq["max_n"] == 8
        look = seq["looks"][0]
        assert look["n"] == 4 and look["fraction"] == pytest.approx(0.5)
        assert look["boundary"] > 2.5  # O'Brien-Fleming spends little alpha at half the information
        assert look["crossed"] is None  # bm25 is not shown superior on 4 questions: paused there
        assert manifest["status"] == "paused"
        assert all(len(recs) == 4 for recs in first.records.values())  # 2 of each dataset, every compressor
        assert first["primary"]["sequential"]["looks_done"] == 1
        for sub in first["datasets"].values():  # each dataset's test is descriptive: the declared one is pooled
            assert sub["primary"]["scope"] == "dataset" and "sequential" not in sub["primary"]
        text = (out / "summary.md").read_text(encoding="utf-8")
        assert text.count("the primary comparison on this dataset alone") == 2
        one = {**first.summary, "primary": {**first["primary"], "scope": "dataset"}}  # a dataset's lines: no verdict word
        assert not any(line.startswith("verdict:") for line in primary_lines(one))
        assert primary_lines(one)[0].endswith("descriptive, no verdict (the declared test is pooled over the suite)")
        again = _run(config, out, data, resume=True)
        seq = json.loads((out / "manifest.json").read_text())["sequential"]
        assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
        assert seq["looks"][0] == look  # the first look recomputed from its records, unchanged
        assert seq["looks_done"] == 2 and seq["looks"][1]["n"] == 8
        assert all(len(recs) == 8 for recs in again.records.values())
        assert again["primary"]["verdict"] == seq["word"]


def test_designs_the_run_cannot_follow_are_refused_before_anything_is_written(tmp_path):
    data = _split(tmp_path)
    with fake_openai_server([200], lambda body: "x") as server:
        config = _config(tmp_path, server.base_url, 'compressor = "bm25"\nlooks = [0.5, 1.0]\nmax_n = 20\n')
        with pytest.raises(ConfigError, match="max_n = 20 was declared, and this run has 8 questions"):
            _run(config, tmp_path / "a", data)
        config = _config(tmp_path, server.base_url, 'compressor = "bm25"\nlooks = [0.5, 1.0]\nmax_n = 8\n')
        from ragsift.evaluation.run.shards import parse_shard

        with pytest.raises(ConfigError, match="no --shard"):
            _run(config, tmp_path / "b", data, shard=parse_shard("0/2"))
    config = _config(tmp_path, "http://127.0.0.1:9", 'compressor = "bm25"\n')
    with pytest.raises(ConfigError, match="--until-look needs sequential looks"):
        _run(config, tmp_path / "c", data, until_look=1)
    assert not any((tmp_path / d).exists() for d in ("a", "b", "c"))


def test_a_resume_refuses_a_changed_margin(tmp_path):
    """The margin is declared before the evaluation: a resume with another one is refused, whether
    the config file or a --set override changed it."""
    data = _split(tmp_path)
    primary = 'compressor = "bm25"\ntest = "non-inferiority"\nmargin = 3.0\n'
    config = _config(tmp_path, "http://127.0.0.1:9", primary)
    out = tmp_path / "run"
    run_evaluation(RunOptions(config=config, out=out, data=data, limit=1, no_reader=True, progress=False,
                              echo=lambda _: None))
    from ragsift.config import load_config

    moved = load_config(config).with_overrides(["evaluation.primary.margin=5.0"])
    with pytest.raises(ConfigError, match="cannot resume: the --set overrides differ"):
        run_evaluation(RunOptions(config=moved, out=out, data=data, limit=2, no_reader=True, resume=True,
                                  progress=False, echo=lambda _: None))
    config.write_text(config.read_text().replace("margin = 3.0", "margin = 2.0"))
    with pytest.raises(ConfigError, match="cannot resume: the config file changed"):
        run_evaluation(RunOptions(config=config, out=out, data=data, limit=2, no_reader=True, resume=True,
                                  progress=False, echo=lambda _: None))
