"""How the ``evidentiality`` labeler's strong / weak / distractor records agree with gold
supporting facts.

Reads the records written by ``ragsift label -l evidentiality`` (JSONL), their manifest
(``<output>.manifest.json``: questions, skips, reader calls, cache hits, seconds, tokens) and the
dataset they were made from (which must have sentence-level gold evidence, e.g. HotpotQA's
supporting facts). A record is matched to its sentence by (question id, document title = the
first line of the record's context, sentence text), splitting the documents as the labeler does.

Reported: per kind, the records and the share that are supporting facts; precision / recall of
"strong" against the supporting facts among the labelled questions' candidate sentences (every
record of a labelled question is a candidate); the base rate (share of candidates that are
supporting facts); per kind, the records whose document title holds a gold answer (the labeler
shows titles to the reader, so such a sentence can look "strong" through its title alone); the
labeler's counts from the manifest.

    python benchmarks/evidentiality_agreement.py labels/evi.jsonl \
        --input data/training/hotpotqa-train-pool.json [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ragsift.datasets.loading import load_examples
from ragsift.evidence import evidence_mask
from ragsift.metrics.normalize import contains_answer
from ragsift.splitters.presplit import PresplitSplitter

KINDS = ("strong", "weak", "distractor")


def agreement(records: list[dict[str, Any]], examples: dict[str, Any]) -> dict[str, Any]:
    """Agreement figures of ``records`` with the gold evidence of ``examples`` (id -> Example)."""
    splitter = PresplitSplitter(fallback="sentencizer")
    gold: dict[str, set[tuple[str, str]]] = {}
    known: dict[str, set[tuple[str, str]]] = {}
    for qid in {r["example_id"] for r in records}:
        if qid not in examples:
            raise ValueError(f"record for question {qid!r}, which is not in the dataset")
        example = examples[qid]
        if example.evidence is None:
            raise ValueError(f"question {qid!r} has no gold evidence")
        sentences = splitter.split_all(example.documents)
        mask = evidence_mask(sentences, example.evidence)
        gold[qid] = {(example.documents[s.doc_index].title, s.text) for s, g in zip(sentences, mask, strict=True) if g}
        known[qid] = {(example.documents[s.doc_index].title, s.text) for s in sentences}
    total: Counter[str] = Counter()
    supporting: Counter[str] = Counter()
    title_has_answer: Counter[str] = Counter()  # records whose document title holds a gold answer
    for r in records:
        if r["kind"] not in KINDS:
            raise ValueError(f"unknown kind {r['kind']!r} in record of question {r['example_id']!r}")
        key = (r["context"].split("\n", 1)[0], r["sentence"])
        if key not in known[r["example_id"]]:
            raise ValueError(f"record of question {r['example_id']!r}: sentence {r['sentence'][:60]!r} of {key[0]!r} "
                             "is not a sentence of that question's documents (another dataset or splitter?)")
        total[r["kind"]] += 1
        title_has_answer[r["kind"]] += any(contains_answer(key[0], a) for a in examples[r["example_id"]].answers)
        supporting[r["kind"]] += key in gold[r["example_id"]]
    candidates = sum(total.values())
    gold_candidates = sum(supporting.values())
    per_kind = {
        k: {"records": total[k], "supporting": supporting[k], "title_has_answer": title_has_answer[k],
            "share_supporting": supporting[k] / total[k] if total[k] else None}
        for k in KINDS
    }
    strong_tp = supporting["strong"]
    return {
        "questions_with_records": len(gold),
        "candidates": candidates,
        "supporting_candidates": gold_candidates,
        "base_rate": gold_candidates / candidates if candidates else None,
        "per_kind": per_kind,
        "strong_precision": strong_tp / total["strong"] if total["strong"] else None,
        "strong_recall": strong_tp / gold_candidates if gold_candidates else None,
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(figures: dict[str, Any], report: dict[str, Any]) -> str:
    lines = ["| kind | records | supporting facts | share | title holds the answer |", "|---|---:|---:|---:|---:|"]
    for k in KINDS:
        f = figures["per_kind"][k]
        lines.append(f"| {k} | {f['records']} | {f['supporting']} | {_pct(f['share_supporting'])} | "
                     f"{f['title_has_answer']} |")
    lines.append(f"| all candidates | {figures['candidates']} | {figures['supporting_candidates']} | "
                 f"{_pct(figures['base_rate'])} | {sum(f['title_has_answer'] for f in figures['per_kind'].values())} |")
    lines += [
        "",
        f"strong vs supporting facts: precision {_pct(figures['strong_precision'])}, "
        f"recall {_pct(figures['strong_recall'])} ({figures['questions_with_records']} labelled questions).",
    ]
    if report:
        lines.append(
            f"questions {report.get('questions')}: closed-book correct {report.get('closed_book_correct')}, "
            f"no strong sentence {report.get('no_strong_evidence')}, labelled {report.get('labelled_questions')}; "
            f"reader calls {report.get('reader_calls')}, cache hits {report.get('cache_hits')}, "
            f"reader seconds {report.get('reader_seconds', 0):.0f}, prompt tokens {report.get('prompt_tokens')}, "
            f"completion tokens {report.get('completion_tokens')}."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", help="JSONL records of `ragsift label -l evidentiality`")
    parser.add_argument("--input", "-i", required=True, help="the dataset the records were made from")
    parser.add_argument("--manifest", help="the run's manifest (default: <labels>.manifest.json if present)")
    parser.add_argument("--json", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    with open(args.labels, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    examples = {e.id: e for e in load_examples(args.input)}
    figures = agreement(records, examples)
    manifest = Path(args.manifest or f"{args.labels}.manifest.json")
    report = json.loads(manifest.read_text())["report"] if manifest.is_file() else {}
    print(markdown(figures, report))
    if args.json:
        Path(args.json).write_text(json.dumps({"agreement": figures, "report": report}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
