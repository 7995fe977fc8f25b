"""EXIT's Yes/No scoring on the two engines: torch (transformers) and llama.cpp, same model, same examples.

For each model (Qwen2.5-Coder-0.5B- and 1.5B-Instruct, the GGUF Q4_K_M files of the reader
configs), the scorer of ``configs/exit-qwen-<size>.toml`` (EXIT's prompt in Qwen's chat template)
runs on the first N examples of the development pool (``data/training/hotpotqa-dev-pool.json``;
sentencizer sentences, all 10 documents) on:

- ``torch``: ``backend = "torch"``, the GGUF dequantised to fp32 by transformers, the default
  ``prefix-shared`` mode (the engine's ``packed`` layout), CPU;
- ``llama-cpp``: ``backend = "llama-cpp"``, the GGUF run by llama.cpp, ``prefix-shared`` (its
  ``prefix-tree`` layout: the cache cut back and extended along the prompt tree);
- with ``--reference`` also each engine without prefix reuse (torch ``reference`` = padded batches,
  llama.cpp ``reference`` = every prompt from an empty cache).

Reported per row: tokens evaluated against the prompt tree's distinct tokens (the bound: every
distinct prefix once), forward passes, wall and CPU seconds (this process; the sum over
examples), seconds per question, sentences per second, and the largest score difference against
the llama.cpp no-reuse run when there is one (asserted <= 1e-4 for llama.cpp's prefix reuse), else
against llama.cpp's prefix reuse. The two engines compute with different weights (fp32
dequantised vs Q4_K_M as llama.cpp computes it), so their scores differ by more than rounding.
Both engines run in one process with ``OMP_WAIT_POLICY=PASSIVE`` (the script sets it before
torch loads unless the environment sets a policy; docs/exit.md). Nothing is tuned: this script only measures.

    python benchmarks/yes_no_engines.py --models 0.5b,1.5b --examples 5 --threads 2 --reference --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from markdown_section import write_section

from ragsift.openmp import prefer_passive_wait

prefer_passive_wait()  # this benchmark owns its process: OMP_WAIT_POLICY=PASSIVE before torch loads, unless set

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Yes/No engines (torch vs llama.cpp, EXIT scoring)"
DEV_POOL = ROOT / "data" / "training" / "hotpotqa-dev-pool.json"
ROWS = (("torch", "prefix-shared"), ("torch", "reference"), ("llama-cpp", "prefix-shared"), ("llama-cpp", "reference"))


def scorer_spec(size: str, backend: str, mode: str, threads: int | None) -> dict[str, Any]:
    """The scorer of configs/exit-qwen-<size>.toml on ``backend`` in ``mode``."""
    from ragsift.config import load_config

    config = load_config(ROOT / "configs" / f"exit-qwen-{size}.toml")
    assert config.compressor is not None
    spec = {**config.compressor["scorer"], "backend": backend, "mode": mode}
    if backend == "torch":
        spec.pop("n_threads", None)
        spec.update(device="cpu", dtype="fp32")
    else:
        spec["n_threads"] = threads
    return spec


def tree_tokens(prompts: list[Any]) -> int:
    from ragsift.lm.prefix_tree import tree_tokens as count

    return count([p.ids for p in prompts])


def run_row(scorer: Any, examples: list[tuple[Any, list[Any]]]) -> dict[str, Any]:
    tokens = passes = 0
    scores, wall, cpu = [], 0.0, 0.0
    for example, sentences in examples:
        start, start_cpu = time.perf_counter(), time.process_time()
        scores.append(scorer.score(example, sentences))
        wall += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        tokens += scorer.stats["tokens"]
        passes += scorer.stats["forward_passes"]
    return {"tokens": tokens, "passes": passes, "wall": wall, "cpu": cpu, "scores": np.concatenate(scores),
            "layout": scorer.stats.get("layout")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="0.5b,1.5b", help="comma-separated: 0.5b, 1.5b")
    parser.add_argument("--examples", type=int, default=5, help="first N examples of the development pool")
    parser.add_argument("--data", default=str(DEV_POOL), help="the examples (default: the development pool)")
    parser.add_argument("--max-sentences", type=int, help="score only the first N sentences of each example (smoke runs)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads and llama.cpp n_threads")
    parser.add_argument("--engines", default="torch,llama-cpp", help="comma-separated: torch, llama-cpp")
    parser.add_argument("--reference", action="store_true", help="also run each engine without prefix reuse")
    parser.add_argument("--write", metavar="FILE", help=f"replace the '{SECTION}' section of FILE with the results")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from ragsift.datasets import load_examples
    from ragsift.registry import build_plugin
    from ragsift.splitters.sentencizer import SentencizerSplitter

    sizes = [s.strip() for s in args.models.split(",") if s.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    splitter = SentencizerSplitter()
    examples = [(ex, splitter.split_all(ex.documents)[: args.max_sentences])
                for ex in load_examples(args.data, limit=args.examples)]
    n_questions, n_sentences = len(examples), sum(len(s) for _, s in examples)
    from ragsift.types import Document, Example

    warm_doc = Document("Warm-up", "A first call of the scorer. Its allocations are not timed.")
    warm_example = Example("warm-up", "What does the warm-up do?", ("allocations",), (warm_doc,))
    warm_up = (warm_example, splitter.split_all(warm_example.documents))
    rows: list[tuple[str, str, str, dict[str, Any]]] = []
    load_seconds: dict[tuple[str, str], float] = {}
    for size in sizes:
        results: dict[tuple[str, str], dict[str, Any]] = {}
        for backend, mode in ROWS:
            if backend not in engines or (mode == "reference" and not args.reference):
                continue
            scorer = build_plugin("scorer", scorer_spec(size, backend, mode, args.threads))
            start = time.perf_counter()
            scorer.warm_up()
            load_seconds.setdefault((size, backend), time.perf_counter() - start)
            # the bound of this engine's prompts (each engine encodes with its own copy of the tokenizer)
            bound = sum(tree_tokens(scorer.prompts(ex, sentences)) for ex, sentences in examples)
            scorer.score(*warm_up)  # first-call allocations, not timed (another question: nothing of it is reused)
            results[(backend, mode)] = r = {**run_row(scorer, examples), "bound": bound}
            print(f"{size} {backend} {mode}: {r['wall']:.1f} s wall, {r['tokens']:,} tokens (bound {bound:,})",
                  file=sys.stderr)
            del scorer
        if ("llama-cpp", "prefix-shared") in results and ("llama-cpp", "reference") in results:
            diff = np.abs(results[("llama-cpp", "prefix-shared")]["scores"] - results[("llama-cpp", "reference")]["scores"])
            assert diff.max() <= 1e-4, f"llama.cpp prefix reuse changed a score by {diff.max():.2e}"
        anchor = results.get(("llama-cpp", "reference"), results.get(("llama-cpp", "prefix-shared")))
        for (backend, mode), r in results.items():
            r["diff"] = None if anchor is None else float(np.abs(r["scores"] - anchor["scores"]).max())
            rows.append((size, backend, mode, r))

    anchor_name = "llama-cpp reference" if args.reference and "llama-cpp" in engines else "llama-cpp prefix-shared"
    command = (f"python benchmarks/yes_no_engines.py --models {args.models} --examples {args.examples} "
               f"--threads {args.threads} --engines {args.engines}" + (" --reference" if args.reference else "")
               + (f" --max-sentences {args.max_sentences}" if args.max_sentences else ""))
    import importlib.metadata

    lines = [
        f"Command: `{command} --write BENCHMARKS.md`  ",
        f"EXIT's scorer of `configs/exit-qwen-<size>.toml` (EXIT's prompt in Qwen's chat template) on the first "
        f"{n_questions} examples of `{Path(args.data).name}` ({n_sentences} sentences, sentencizer, 10 documents each); "
        f"torch {torch.__version__} (the GGUF dequantised to fp32, {args.threads} threads), llama-cpp-python "
        f"{importlib.metadata.version('llama-cpp-python')} (Q4_K_M, {args.threads} threads), OMP_WAIT_POLICY="
        f"{os.environ.get('OMP_WAIT_POLICY')}; {platform.machine()}, {os.cpu_count()} CPUs shared with other work "
        f"(one run; CPU time is the steadier figure). Times exclude model loading ("
        + ", ".join(f"{s} {b}: {t:.0f} s" for (s, b), t in load_seconds.items()) + ").",
        "",
        "| model | engine | mode (layout) | tokens evaluated | prompt-tree tokens (bound) | tokens / bound | "
        "forward passes | wall (s) | CPU (s) | s / question | sentences/s | max abs score diff vs "
        f"{anchor_name} |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, backend, mode, r in rows:
        bound = r["bound"]
        diff = "-" if r["diff"] is None else f"{r['diff']:.2e}"
        lines.append(
            f"| {size} | {backend} | {mode} ({r['layout']}) | {r['tokens']:,} | {bound:,} | {r['tokens'] / bound:.3f} | "
            f"{r['passes']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['wall'] / n_questions:.2f} | "
            f"{n_sentences / r['wall']:.2f} | {diff} |"
        )
    lines += [
        "",
        "The bound counts every distinct prefix of a question's prompts once. Tokens evaluated include the torch "
        "packed layout's repeated suffix starts and the few shared tokens llama.cpp runs again (its batches start at "
        "multiples of 4 and hold at least 8 tokens, so that its kernels compute every row as for the prompt alone: "
        "docs/exit.md); "
        "llama.cpp keeps its KV cache between calls, so each question reuses the start it shares with the question "
        "before (Qwen's system message and the instruction's first line) and can run fewer tokens than the bound. "
        "Score "
        "differences between the engines come from their weights (fp32 dequantised vs Q4_K_M computed by llama.cpp).",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        write_section(Path(args.write), SECTION, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
