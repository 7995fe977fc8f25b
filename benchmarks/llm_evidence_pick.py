"""Can the reader model itself pick the evidence inside the ranker's documents? (issue 23)

The two-hop document ranker (``models/bridge-documents``) ranks each development question's
documents; then the 1.5B model of the main job's reader, through llama.cpp, is asked to choose
before the same model reads the result with the main job's reader prompt:

- ``ranked``: the ranker's 3 documents whole, best first (the main job's primary, bridge-ranked);
- ``sentences``: the sentences of those 3 documents numbered ``[1] ... [n]`` under their titles;
  the model names the numbers needed, and only those sentences are read (under their titles);
- ``notes``: the model writes one or two sentences of the facts in the 3 documents that answer the
  question, and only its notes are read;
- ``documents``: the sentences of the ranker's ``--pick-from`` best documents numbered; the
  documents holding a named sentence are read whole, best first.

When the model names nothing usable, ``sentences`` and ``documents`` fall back to the 3 documents
whole. Reported per variant: EM, the share of questions with every gold document in what is read,
the words read, and the seconds of the choice and of the read. Greedy decoding throughout, so a
rerun gives the same answers. The evaluation file is refused.

    python benchmarks/llm_evidence_pick.py --limit 60 --json benchmarks/results/llm-evidence-pick/dev60.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.metrics.normalize import normalize_answer
from ragsift.registry import build_plugin
from ragsift.selectors.documents import document_scores
from ragsift.trainers.bridge_documents import gold_documents
from ragsift.types import Example

DEV = "data/training/hotpotqa-dev-pool.json"
MODEL = {"name": "llama-cpp", "model": "split:qwen2.5-coder-1.5b-instruct", "n_ctx": 8192, "n_threads": 2,
         "stop": ["\n"]}
#: the main job's reader (configs/reader-qwen1.5b.toml)
READER = {**MODEL, "max_new_tokens": 32,
          "system_template": "Answer the question using the context. Reply with the answer only: a short phrase, no sentence.",
          "user_template": "Context:\n{context}\n\nQuestion: {query}"}
PICKER = {**MODEL, "max_new_tokens": 16, "system_template": "You find the evidence for a question in numbered sentences.",
          "user_template": "{context}\n\nQuestion: {query}\n\nWhich sentences are needed to answer the question? "
                           "Reply with their numbers only, separated by commas."}
NOTES = {**MODEL, "max_new_tokens": 48, "system_template": "You take notes for answering a question.",
         "user_template": "Context:\n{context}\n\nQuestion: {query}\n\nWrite down, in one or two short sentences, "
                          "the facts from the context that answer the question."}
VARIANTS = ("ranked", "sentences", "notes", "documents")


def whole(e: Example, docs: list[int]) -> str:
    return "\n\n".join(f"{e.documents[d].title}\n{e.documents[d].text}" for d in docs)


def sentence_text(e: Example, d: int, i: int) -> str:
    a, b = (e.documents[d].sentence_spans or ())[i]
    return e.documents[d].text[a:b].strip()


def numbered(e: Example, docs: list[int]) -> tuple[str, dict[int, tuple[int, int]]]:
    """The documents' sentences (the dataset's own, an empty one too) numbered from 1 under their
    titles, and number -> (document, sentence)."""
    lines: list[str] = []
    table: dict[int, tuple[int, int]] = {}
    for d in docs:
        lines.append(e.documents[d].title)
        for i in range(len(e.documents[d].sentence_spans or ())):
            table[len(table) + 1] = (d, i)
            lines.append(f"[{len(table)}] {sentence_text(e, d, i)}")
        lines.append("")
    return "\n".join(lines).strip(), table


def named(reply: str, table: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
    return list(dict.fromkeys(table[int(n)] for n in re.findall(r"\d+", reply) if int(n) in table))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=60, help="the first N development questions")
    parser.add_argument("--pick-from", type=int, default=4, help="documents offered to the 'documents' variant")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--json", type=Path, help="write the figures and the per-question rows here")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    examples = list(load_examples(DEV, "hotpotqa", limit=args.limit))
    refuse_evaluation_data(Path(DEV), examples, "benchmarks/llm_evidence_pick.py")
    owner = "benchmarks/llm_evidence_pick.py"
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": {"name": "sentencizer"}}, owner)
    ranker = build_plugin("scorer", {"name": "bridge-documents", "model": "models/bridge-documents"}, owner)
    reader, picker, notes = (build_plugin("reader", spec, owner) for spec in (READER, PICKER, NOTES))

    def choose(e: Example, ranked: list[int], variant: str) -> tuple[str, list[int], str]:
        """(context read, documents it draws on, the model's reply)."""
        top = ranked[:3]
        if variant == "ranked":
            return whole(e, top), top, ""
        if variant == "notes":
            reply = notes.answer(e.question, whole(e, top)).text.strip()
            return reply or whole(e, top), top, reply
        offered = top if variant == "sentences" else ranked[: args.pick_from]
        text, table = numbered(e, offered)
        reply = picker.answer(e.question, text).text
        picked = named(reply, table)
        if not picked:
            return whole(e, top), top, reply
        docs = [d for d in offered if any(p[0] == d for p in picked)]
        if variant == "documents":
            return whole(e, docs), docs, reply
        return "\n\n".join(e.documents[d].title + "\n" + " ".join(sentence_text(e, d, i) for dd, i in picked if dd == d)
                           for d in docs), docs, reply

    rows: list[dict[str, Any]] = []
    for n, e in enumerate(examples, 1):
        sentences = splitter.split_all(e.documents)
        docs = document_scores(sentences, np.asarray(ranker.score(e, sentences)), "max")
        ranked = [docs.docs[j] for j in docs.ranked()]
        row: dict[str, Any] = {"id": e.id, "answers": list(e.answers)}
        for variant in variants:
            t0 = time.perf_counter()
            context, used, reply = choose(e, ranked, variant)
            t1 = time.perf_counter()
            answer = reader.answer(e.question, context).text
            row[variant] = {"em": float(any(normalize_answer(answer) == normalize_answer(a) for a in e.answers)),
                            "gold_documents_read": gold_documents(e) <= set(used), "words": len(context.split()),
                            "choose_s": t1 - t0, "read_s": time.perf_counter() - t1, "reply": reply, "answer": answer}
        rows.append(row)
        print(f"{n}/{len(examples)} " + " ".join(f"{v} {row[v]['em']:.0f}" for v in variants), file=sys.stderr, flush=True)

    def mean(variant: str, key: str, f: Callable[[Any], float] = float) -> float:
        return float(np.mean([f(r[variant][key]) for r in rows]))

    summary = {v: {"em": 100 * mean(v, "em"), "gold_documents_read": 100 * mean(v, "gold_documents_read"),
                   "words": mean(v, "words"), "choose_s": mean(v, "choose_s"), "read_s": mean(v, "read_s")}
               for v in variants}
    text = json.dumps({"command": " ".join(sys.argv), "development_file": DEV, "questions": len(rows),
                       "summary": summary}, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**json.loads(text), "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
