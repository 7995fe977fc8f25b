"""The two-stage compressor: its fine scorer reads only the survivors of the coarse stage (counted),
it equals the single-stage compressor when the coarse stage keeps everything, both stages sweep,
and its config errors say what to fix."""

from __future__ import annotations

import math
from pathlib import Path

import counting_plugins as cp
import numpy as np
import pytest

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError, RagsiftError
from ragsift.evaluation.predictions import prediction_path, read_records
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
from ragsift.registry import build_plugin, reset_registry
from ragsift.selectors.documents import document_scores

TESTS = Path(__file__).parents[1]
HOTPOT = TESTS / "data" / "hotpotqa-train-sf100.json"  # development data


@pytest.fixture(autouse=True)
def counting() -> object:
    reset_registry()
    cp.install()
    yield
    reset_registry()


def examples(n: int = 4) -> list:  # type: ignore[type-arg]
    return list(load_examples(HOTPOT, limit=n))


def cascade(**stages: object) -> object:
    return build_plugin("compressor", {"name": "cascade", "splitter": "presplit", **stages})


def test_the_fine_scorer_scores_only_the_sentences_of_the_surviving_documents():
    compressor = cascade(scorer="counting-bm25", selector={"name": "top-documents", "k": 3},
                         fine_scorer="counting-bm25", fine_selector={"name": "top-k", "k": 2})
    plain = build_plugin("compressor", {"name": "pipeline", "splitter": "presplit", "scorer": "bm25",
                                        "selector": "all", "assembler": "original-order"})
    for example in examples():
        cp.SCORED.clear()
        result = compressor.compress(example)
        everything = plain.compress(example)  # the coarse scores, computed apart
        docs = document_scores(everything.sentences, np.asarray(everything.scores), "max")
        top3 = [docs.docs[j] for j in docs.ranked()[:3]]
        survivors = [i for i, s in enumerate(result.sentences) if s.doc_index in top3]
        assert len(example.documents) == 10 and 3 * 2 <= len(survivors) < len(result.sentences)
        assert [len(result.sentences), len(survivors)] == cp.SCORED  # coarse: all; fine: the survivors only
        assert len(result.kept) == 2 and set(result.kept) <= set(survivors)
        assert result.info["coarse"]["survivors"] == len(survivors)
        assert [d["doc"] for d in result.info["coarse"]["documents"]] == top3
        assert result.info["coarse"]["scores"] == pytest.approx(everything.scores)
        # the record's scores are the fine stage's: none for sentences the fine scorer never read
        assert [math.isnan(s) for s in result.scores] == [i not in survivors for i in range(len(result.sentences))]
        assert set(result.timings) == {"split", "score", "select", "assemble"}


def test_a_coarse_stage_that_keeps_everything_gives_the_single_stage_compressor():
    for fine_selector in ({"name": "top-k", "k": 3}, {"name": "top-k", "k": 1, "per_document": True},
                          {"name": "threshold", "threshold": 2.0}):
        single = build_plugin("compressor", {"name": "pipeline", "splitter": "presplit", "scorer": "counting-bm25",
                                             "selector": fine_selector, "assembler": {"name": "original-order",
                                                                                      "title": True}})
        two = cascade(scorer="random", selector="all", fine_scorer="counting-bm25", fine_selector=fine_selector,
                      assembler={"name": "original-order", "title": True})
        for example in examples():
            a, b = single.compress(example), two.compress(example)
            assert (b.kept, b.text, b.scores) == (a.kept, a.text, a.scores)
            assert a.kept  # a real selection, not an empty one on both sides


def test_without_a_fine_scorer_the_fine_selector_ranks_the_survivors_by_their_coarse_scores():
    two = cascade(scorer="bm25", selector={"name": "top-documents", "k": 2}, fine_selector={"name": "top-k", "k": 3})
    keep_docs = cascade(scorer="bm25", selector={"name": "top-documents", "k": 2})
    for example in examples():
        result, whole = two.compress(example), keep_docs.compress(example)
        survivors = set(whole.kept)
        best = sorted(survivors, key=lambda i: (-whole.scores[i], i))[:3]
        assert result.kept == best and result.scores == whole.scores  # the coarse scores, every sentence
        # survivors kept whole: every sentence of the two documents, as the pipeline with that selector
        pipeline = build_plugin("compressor", {"name": "pipeline", "splitter": "presplit", "scorer": "bm25",
                                               "selector": {"name": "top-documents", "k": 2},
                                               "assembler": "original-order"})
        alone = pipeline.compress(example)
        assert (whole.kept, whole.text) == (alone.kept, alone.text)
        assert len({whole.sentences[i].doc_index for i in whole.kept}) == 2


def test_keep_whole_keeps_the_best_documents_whole_and_the_fine_stage_reads_only_the_rest():
    patched = cascade(scorer="counting-bm25", selector={"name": "top-documents", "k": 5}, keep_whole=2,
                      fine_scorer="counting-bm25", fine_selector={"name": "top-k", "k": 1, "per_document": True},
                      assembler={"name": "original-order", "document_order": "rank"})
    plain = build_plugin("compressor", {"name": "pipeline", "splitter": "presplit", "scorer": "bm25",
                                        "selector": "all", "assembler": "original-order"})
    for example in examples():
        cp.SCORED.clear()
        result = patched.compress(example)
        everything = plain.compress(example)
        docs = document_scores(everything.sentences, np.asarray(everything.scores), "max")
        top5 = [docs.docs[j] for j in docs.ranked()[:5]]
        sentences = result.sentences
        whole = [i for d in top5[:2] for i, s in enumerate(sentences) if s.doc_index == d]
        rest = [i for i, s in enumerate(sentences) if s.doc_index in top5[2:]]
        # coarse: every sentence; fine: only the three patched documents' sentences, never the whole ones
        assert [len(sentences), len(rest)] == cp.SCORED and len(rest) < len(sentences) - len(whole)
        assert result.kept[: len(whole)] == whole  # best document first, each in original order
        patch = result.kept[len(whole):]
        assert sorted(sentences[i].doc_index for i in patch) == sorted(top5[2:])  # one sentence per patched document
        for i in patch:  # each the best (BM25) sentence of its document
            own = [j for j in rest if sentences[j].doc_index == sentences[i].doc_index]
            assert everything.scores[i] == max(everything.scores[j] for j in own)
        assert result.info["coarse"]["whole_sentences"] == len(whole) and result.info["coarse"]["survivors"] == len(rest)
        # the assembled text: the two whole documents, then the patches, in rank order
        texts = [sentences[i].text for i in result.kept]
        positions = [result.text.index(t) for t in texts]
        assert positions == sorted(positions)


def test_keep_whole_is_part_of_the_config_a_frozen_or_recorded_run_rebuilds_from():
    patched = cascade(scorer="bm25", selector={"name": "top-documents", "k": 5}, keep_whole=2, fine_scorer="bm25",
                      fine_selector={"name": "top-k", "k": 1, "per_document": True})
    assert patched.config()["keep_whole"] == 2
    rebuilt = build_plugin("compressor", {"name": "cascade", **patched.config()})
    example = examples(1)[0]
    assert rebuilt.config() == patched.config() and rebuilt.compress(example).kept == patched.compress(example).kept
    assert "keep_whole" not in cascade(scorer="bm25", selector={"name": "top-documents", "k": 5}).config()


def test_keep_whole_covering_every_survivor_is_the_coarse_stage_alone():
    whole = cascade(scorer="bm25", selector={"name": "top-documents", "k": 3}, keep_whole=3, fine_scorer="bm25",
                    fine_selector={"name": "top-k", "k": 1}, assembler={"name": "original-order", "title": True})
    coarse = cascade(scorer="bm25", selector={"name": "top-documents", "k": 3},
                     assembler={"name": "original-order", "title": True})
    for example in examples():
        a, b = whole.compress(example), coarse.compress(example)
        assert (a.kept, a.text) == (b.kept, b.text) and len(a.kept) > 3


@pytest.mark.parametrize(("stages", "message"), [
    ({"scorer": "bm25", "selector": {"name": "top-documents", "k": 3}, "keep_whole": 2},
     "keep_whole = 2 needs a fine_selector"),
    ({"scorer": "bm25", "selector": {"name": "top-documents", "k": 3}, "keep_whole": -1,
      "fine_selector": "all"}, "keep_whole"),
    ({"selector": {"name": "top-documents", "k": 2}}, "stage 'scorer' needs a plugin"),
    ({"scorer": "bm25"}, "stage 'selector' needs a plugin"),
    ({"scorer": "bm25", "selector": {"name": "top-documents"}}, "give exactly one of 'k'"),
    ({"scorer": "bm25", "selector": "all", "fine_scorer": "oracle",
      "fine_selector": {"name": "threshold", "threshold": 3.0}},
     r"CascadeCompressor fine_selector: ThresholdSelector: threshold 3.0 is outside the score range \[0.0, 1.0\] "
     "of scorer 'oracle'"),
    ({"scorer": "oracle", "selector": {"name": "top-documents", "threshold": -1.0}},
     r"CascadeCompressor selector: TopDocumentsSelector: threshold -1.0 .* keeps every document"),
    ({"scorer": "bm25", "selector": "all", "fine_scorer": "no-such-scorer"}, "Unknown scorer 'no-such-scorer'"),
    ({"scorer": "bm25", "selector": "all", "fine_assembler": "original-order"}, "fine_assembler"),
])
def test_config_errors_name_the_stage_and_what_to_fix(stages, message):
    with pytest.raises(RagsiftError, match=message):  # a ConfigError (UnknownPluginError for a name)
        cascade(**stages)


def _config(tmp_path: Path, sweep: str, limit: int = 3) -> Path:
    path = tmp_path / "cascade.toml"
    path.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{HOTPOT}"

[compressors.docs]
name = "cascade"
splitter = "presplit"
scorer = "bm25"
fine_scorer = "counting-bm25"

[compressors.docs.selector]
name = "top-documents"
k = 2

[compressors.docs.fine_selector]
name = "top-k"
k = 1

[reader]
name = "counting"

[evaluation]
limit = {limit}
warmup = 0
bootstrap_samples = 200
metrics = ["evidence", "exact-match"]
{sweep}""", encoding="utf-8")
    return path


def test_a_sweep_varies_both_stages_and_scores_each_set_of_survivors_once(tmp_path: Path):
    sweep = ("[evaluation.sweep.docs.selector]\nk = [2, 3]\n"
             "[evaluation.sweep.docs.fine_selector]\nk = [1, 2, 4]\n")
    summary = run_evaluation(RunOptions(config=_config(tmp_path, sweep), out=tmp_path / "run", progress=False,
                                        echo=lambda _: None))
    labels = [f"docs@selector.k={d},fine_selector.k={k}" for d in (2, 3) for k in (1, 2, 4)]
    assert list(summary["compressors"]) == labels
    assert all(summary["compressors"][label]["family"] == "docs" for label in labels)
    # the fine scorer read each example's survivors once per coarse setting, never per fine setting
    assert len(cp.SCORED) == 2 * 3
    survivors = {}
    for label in labels:
        records = read_records(prediction_path(tmp_path / "run", label))
        d, k = (int(part.rpartition("=")[2]) for part in label.split("@")[1].split(","))
        for r in records:
            assert len(r["kept"]) == k and len({s.split(":")[0] for s in r["kept"]}) <= d
            assert r["info"]["coarse"]["survivors"] == sum(s["score"] is not None for s in r["sentences"])
            survivors.setdefault((d, r["id"]), r["info"]["coarse"]["survivors"])
    assert sorted(cp.SCORED) == sorted(survivors.values())
    # each point equals the same cascade run alone
    alone = tmp_path / "alone"
    run_evaluation(RunOptions(config=_config(tmp_path, 'cache = "off"\n'), out=alone, progress=False,
                              echo=lambda _: None))
    for a, b in zip(read_records(prediction_path(alone, "docs")),
                    read_records(prediction_path(tmp_path / "run", "docs@selector.k=2,fine_selector.k=1")), strict=True):
        assert (a["kept"], a["compressed_text"], a["prediction"]) == (b["kept"], b["compressed_text"], b["prediction"])


def test_a_sweep_may_not_vary_a_scorer_of_the_cascade(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"'fine_scorer' cannot be swept.*\(selector, fine_selector, assembler\)"):
        run_evaluation(RunOptions(config=_config(tmp_path, "[evaluation.sweep.docs.fine_scorer]\nk1 = [1.0, 2.0]\n"),
                                  out=tmp_path / "run", progress=False, echo=lambda _: None))
    assert not (tmp_path / "run").exists()
