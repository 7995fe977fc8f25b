"""Which reader prompt for the llama-cpp reader: EXIT's Table-7 prompt or a short answer-only one.

Measured on DEVELOPMENT questions only (default: the first 30 of
``shared/data/hotpotqa-dev-rpt1k.json``, none of which is in the evaluation file), with the
contexts the evaluation job hands the reader: the ``oracle`` compressor's output (the gold
supporting sentences) and the ``none`` compressor's (all 10 documents). Greedy decoding, 32 new
tokens, ``stop = ["\\n"]``, the model's own chat template. Reported per prompt and context: EM and
token F1 (x100, SQuAD normalisation, as ``ragsift evaluate``), prompt tokens and seconds per
question (wall time of the reader call; the machine may be shared, so times are rough).

    python benchmarks/reader_prompt.py --limit 30 --limit-none 10 --threads 2 --write BENCHMARKS.md

The prompt that wins on both contexts (mean of the two F1 figures) is the one the llama-cpp
configs use; the choice is never made on the evaluation file, which this script refuses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from markdown_section import write_section

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Reader prompt (llama-cpp, development questions)"
DEV_FILE = "hotpotqa-dev-rpt1k.json"
#: the development file: beside the repository (shared/data/), or under a main checkout's parent
#: when this runs from a worktree (/work/wt/NAME -> /work/shared/data)
DEFAULT_DATA = next((p / "shared" / "data" / DEV_FILE for p in (ROOT.parent, ROOT.parent.parent)
                     if (p / "shared" / "data" / DEV_FILE).is_file()), ROOT.parent / "shared" / "data" / DEV_FILE)
EVALUATION_FILE = ROOT / "ragsift" / "data" / "hotpotqa-dev-sf100.json"
SHORT_SYSTEM = "Answer the question using the context. Reply with the answer only: a short phrase, no sentence."
SHORT_USER = "Context:\n{context}\n\nQuestion: {query}"

PROMPTS: dict[str, dict[str, str]] = {
    "exit": {},  # ReaderParams' defaults: the EXIT paper's Table-7 reader prompt
    "short": {"system_template": SHORT_SYSTEM, "user_template": SHORT_USER},
}
CONTEXTS = ("oracle", "none")  # gold supporting sentences only; all 10 documents


def refuse_evaluation_questions(data: Path) -> None:
    """Exit when ``data`` shares a question with the evaluation file: prompts are chosen on
    development questions only."""
    import json

    evaluation = {ex["_id"] for ex in json.loads(EVALUATION_FILE.read_text())}
    shared = evaluation & {ex.get("_id") for ex in json.loads(data.read_text())}
    if shared:
        raise SystemExit(f"{data}: {len(shared)} question(s) of the evaluation file ({EVALUATION_FILE.name}); "
                         "choose prompts on development questions only.")


def run(data: Path, limits: dict[str, int], model: str, threads: int | None, prompts: list[str],
        contexts: list[str]) -> list[dict[str, Any]]:
    from ragsift.api import load_compressor
    from ragsift.datasets import load_examples
    from ragsift.metrics.normalize import best_over_gold, exact_match, token_f1
    from ragsift.readers.llamacpp_reader import LlamaCppReader

    refuse_evaluation_questions(data)
    rows = []
    for context_name in contexts:
        examples = list(load_examples(data, format="hotpotqa", limit=limits[context_name]))
        compressor = load_compressor(context_name)
        texts = [compressor.compress(ex).text for ex in examples]
        for prompt_name in prompts:
            reader = LlamaCppReader(model=model, n_threads=threads, max_new_tokens=32, stop=["\n"],
                                    **PROMPTS[prompt_name])
            reader.warm_up()
            em, f1, seconds, cpu, tokens = [], [], [], [], []
            for ex, text in zip(examples, texts, strict=True):
                t, c = time.perf_counter(), time.process_time()
                answer = reader.answer(ex.question, text)
                seconds.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                em.append(best_over_gold(exact_match, answer.text, ex.answers))
                f1.append(best_over_gold(token_f1, answer.text, ex.answers))
                tokens.append(answer.prompt_tokens or 0)
            row = {"prompt": prompt_name, "context": context_name, "n": len(examples),
                   "em": 100 * statistics.fmean(em), "f1": 100 * statistics.fmean(f1),
                   "prompt_tokens": statistics.fmean(tokens), "seconds": statistics.fmean(seconds),
                   "cpu_seconds": statistics.fmean(cpu)}
            print(f"{prompt_name:6s} {context_name:7s} EM {row['em']:5.1f} F1 {row['f1']:5.1f} "
                  f"tokens {row['prompt_tokens']:7.1f} s/q {row['seconds']:6.2f} cpu-s/q {row['cpu_seconds']:6.2f}", flush=True)
            rows.append(row)
    return rows


def choose(rows: list[dict[str, Any]]) -> str:
    """The rule this benchmark applies: the prompt with the higher F1 averaged over the contexts."""
    by_prompt: dict[str, list[float]] = {}
    for r in rows:
        by_prompt.setdefault(r["prompt"], []).append(r["f1"])
    means = {p: statistics.fmean(v) for p, v in by_prompt.items()}
    best = max(means, key=lambda p: means[p])
    detail = ", ".join(f"`{p}` {m:.1f}" for p, m in sorted(means.items()))
    return f"Choice: `{best}` (F1 averaged over the contexts: {detail})."


def section(rows: list[dict[str, Any]], command: str, model: str, data: Path, threads: int | None) -> str:
    lines = [
        f"Command: `{command}`",
        "",
        f"Model `{model}` (llama-cpp reader, {threads or 'all'} threads, greedy, 32 new tokens, stop at a newline, "
        f"the model's chat template), the first n questions of `{data.name}` (development, not the "
        "evaluation file). Contexts: `oracle` = the gold supporting sentences, `none` = all 10 documents. "
        "EM / F1 x100; s/question is the wall time of the reader call on a shared 2-core machine (rough, "
        "inflated by other processes); CPU s/question is this process's CPU time (all its threads).",
        "",
        "Prompts: `exit` = EXIT's Table-7 reader prompt (ragsift's default: the context in the system message, "
        f"user `Query: {{query}}\\nAnswer:`); `short` = system \"{SHORT_SYSTEM}\", user "
        f"`{SHORT_USER.replace(chr(10), chr(92) + 'n')}`.",
        "",
        "| prompt | context | n | EM | F1 | prompt tokens | s/question | CPU s/question |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['prompt']} | {r['context']} | {r['n']} | {r['em']:.1f} | {r['f1']:.1f} | "
                     f"{r['prompt_tokens']:.0f} | {r['seconds']:.2f} | {r['cpu_seconds']:.2f} |")
    lines += ["", choose(rows)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ragsift.models import OFFLINE_QWEN_1_5B

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=30, help="questions read with the gold sentences")
    parser.add_argument("--limit-none", type=int, default=10,
                        help="questions read with all 10 documents (~5x slower per question)")
    parser.add_argument("--model", default=OFFLINE_QWEN_1_5B)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompts", nargs="+", choices=sorted(PROMPTS), default=list(PROMPTS))
    parser.add_argument("--contexts", nargs="+", choices=CONTEXTS, default=list(CONTEXTS))
    parser.add_argument("--write", type=Path, help="replace this script's section of a BENCHMARKS.md")
    args = parser.parse_args(argv)
    limits = {"oracle": args.limit, "none": args.limit_none}
    rows = run(args.data, limits, args.model, args.threads, args.prompts, args.contexts)
    if args.write:
        command = "python benchmarks/reader_prompt.py " + " ".join(sys.argv[1:] if argv is None else argv)
        write_section(args.write, SECTION, section(rows, command.strip(), args.model, args.data, args.threads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
