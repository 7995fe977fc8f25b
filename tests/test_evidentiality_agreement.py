"""benchmarks/evidentiality_agreement.py: agreement of evidentiality records with supporting facts,
on two questions of the training pool with hand-made records whose figures are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.datasets.loading import load_examples
from ragsift.evidence import evidence_mask
from ragsift.splitters.presplit import PresplitSplitter

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "data" / "training" / "hotpotqa-train-pool.json"


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import evidentiality_agreement

    return evidentiality_agreement


def _records(example, kind_of):
    """One record per sentence of the supporting documents, its kind given by kind_of(is_gold, i)."""
    sentences = PresplitSplitter(fallback="sentencizer").split_all(example.documents)
    mask = evidence_mask(sentences, example.evidence)
    docs = {e.doc_index for e in example.evidence}
    out = []
    for i, (s, g) in enumerate((s, g) for s, g in zip(sentences, mask, strict=True) if s.doc_index in docs):
        doc = example.documents[s.doc_index]
        kind = kind_of(g, i)
        out.append({"example_id": example.id, "query": example.question, "context": f"{doc.title}\n{doc.text}",
                    "sentence": s.text, "label": kind == "strong", "kind": kind})
    return out


def test_agreement_counts_supporting_facts_per_kind(script, tmp_path, capsys):
    examples = list(load_examples(POOL, limit=2))
    # question 1: exactly the supporting facts are strong; question 2: every sentence is a distractor
    records = _records(examples[0], lambda g, i: "strong" if g else "weak")
    records += _records(examples[1], lambda g, i: "distractor")
    n_gold = [sum(evidence_mask(PresplitSplitter(fallback="sentencizer").split_all(e.documents), e.evidence))
              for e in examples]
    figures = script.agreement(records, {e.id: e for e in examples})
    strong = figures["per_kind"]["strong"]
    assert strong["records"] == strong["supporting"] == n_gold[0]
    assert figures["per_kind"]["weak"]["supporting"] == 0
    assert figures["per_kind"]["distractor"]["supporting"] == n_gold[1]
    assert figures["strong_precision"] == 1.0
    assert figures["strong_recall"] == pytest.approx(n_gold[0] / sum(n_gold))
    assert figures["candidates"] == len(records) and figures["questions_with_records"] == 2

    # the command line: records + manifest in, markdown (and JSON) out
    raw = json.loads(POOL.read_text())[:2]
    (tmp_path / "pool.json").write_text(json.dumps(raw))
    labels = tmp_path / "evi.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = {"questions": 3, "closed_book_correct": 1, "no_strong_evidence": 0, "labelled_questions": 2,
              "reader_calls": 40, "cache_hits": 2, "reader_seconds": 12.5, "prompt_tokens": 900, "completion_tokens": 80}
    (tmp_path / "evi.jsonl.manifest.json").write_text(json.dumps({"report": report}))
    assert script.main([str(labels), "--input", str(tmp_path / "pool.json"), "--json", str(tmp_path / "f.json")]) == 0
    out = capsys.readouterr().out
    assert f"| strong | {n_gold[0]} | {n_gold[0]} | 100.0% |" in out
    titled = sum(any(a.lower() in r["context"].split("\n")[0].lower() for a in examples[0].answers)
                 for r in records if r["kind"] == "strong")
    assert figures["per_kind"]["strong"]["title_has_answer"] == titled
    assert "closed-book correct 1" in out and "reader calls 40, cache hits 2" in out
    assert json.loads((tmp_path / "f.json").read_text())["agreement"]["strong_precision"] == 1.0


def test_agreement_refuses_records_of_other_sentences(script):
    example = next(iter(load_examples(POOL, limit=1)))
    records = _records(example, lambda g, i: "strong")
    records[0] = {**records[0], "sentence": "A sentence that is in no document."}
    with pytest.raises(ValueError, match="is not a sentence of that question"):
        script.agreement(records, {example.id: example})
