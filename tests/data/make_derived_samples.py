"""Rebuild the derived samples (retrieval and FlashRAG formats) from the real files here.

Run from the repository root: ``python tests/data/make_derived_samples.py``. The output is
deterministic; the tests assert facts that tie each derived record to its source record.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _has_answer(text: str, answers: list[str]) -> bool:
    lowered = text.lower()
    return any(a.lower() in lowered for a in answers)


def retrieval_from_dpr(n: int = 3) -> list[dict]:
    """DPR questions -> {question, answers, ctxs}: the first positive then four hard negatives."""
    out = []
    for rec in json.loads((HERE / "dpr-nq-dev-sample.json").read_text(encoding="utf-8"))[:n]:
        passages = rec["positive_ctxs"][:1] + rec["hard_negative_ctxs"][:4]
        out.append(
            {
                "question": rec["question"],
                "answers": rec["answers"],
                "ctxs": [
                    {
                        "id": p["passage_id"],
                        "title": p["title"],
                        "text": p["text"],
                        "score": p["score"],
                        "has_answer": _has_answer(p["text"], rec["answers"]),
                    }
                    for p in passages
                ],
            }
        )
    return out


def retrieval_from_ircot(n: int = 5) -> list[dict]:
    """IRCoT HotpotQA questions -> {id, question, answers, ctxs} with their ten paragraphs."""
    out = []
    with open(HERE / "hotpotqa-dev-ircot40.jsonl", encoding="utf-8") as handle:
        for line, _ in zip(handle, range(n), strict=False):
            rec = json.loads(line)
            answers = [a for obj in rec["answers_objects"] for a in obj["spans"]]
            out.append(
                {
                    "id": rec["question_id"],
                    "question": rec["question_text"],
                    "answers": answers,
                    "ctxs": [
                        {
                            "id": c["id"],
                            "title": c["title"],
                            "text": c["paragraph_text"],
                            "has_answer": _has_answer(c["paragraph_text"], answers),
                        }
                        for c in rec["contexts"]
                    ],
                }
            )
    return out


def flashrag_from_hotpotqa(n: int = 5) -> list[dict]:
    """Official HotpotQA questions -> FlashRAG items with a saved retrieval_result."""
    out = []
    for rec in json.loads((HERE / "hotpotqa-dev-ircot52-sf.json").read_text(encoding="utf-8"))[:n]:
        out.append(
            {
                "id": rec["_id"],
                "question": rec["question"],
                "golden_answers": [rec["answer"]],
                "metadata": {"type": rec["type"], "level": rec["level"], "supporting_facts": rec["supporting_facts"]},
                "retrieval_result": [
                    {"id": f"{rec['_id']}-{i}", "contents": f"{title}\n{''.join(sentences).strip()}"}
                    for i, (title, sentences) in enumerate(rec["context"])
                ],
            }
        )
    return out


def _write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main() -> None:
    (HERE / "retrieval-nq-dev3.json").write_text(
        json.dumps(retrieval_from_dpr(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    _write_jsonl(HERE / "retrieval-hotpotqa-dev5.jsonl", retrieval_from_ircot())
    _write_jsonl(HERE / "flashrag-hotpotqa-dev5.jsonl", flashrag_from_hotpotqa())


if __name__ == "__main__":
    main()
