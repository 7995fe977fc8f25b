"""ECoRAG reflection: the paper's sequential loop vs one batched evaluator call.

Same process, same compressor (``configs/ecorag-offline.toml`` by default: MiniLM dual encoder,
zero-shot SmolLM2-135M-Instruct Yes/No evaluator, CPU, fp32), on the first N examples of the
bundled HotpotQA sample (or ``--input``). Each example is split and scored once; then the
reflection selector runs in both modes on the same scores, the modes alternating which goes
first from one example to the next. With the causal evaluator a third row, ``batched-padded``,
runs the batched call as plain left-padded batches instead of sharing the prompts' common prefix
through the KV cache. Every mode must keep exactly the same sentences (asserted).

Reported per mode: evaluator calls (model invocations of ``probabilities``), sets judged
(evaluator inputs), wall time of selection (fastest of ``--repeats`` runs), speed-up over
sequential, the chosen k and how many questions ended with an evidential set. ``--threshold``
overrides the evaluator's threshold (to exercise early stopping with a stand-in evaluator);
nothing is tuned on the evaluation sample.

    python benchmarks/ecorag_reflection.py --examples 6 --repeats 2 --threshold 0.5 --threshold 0.23 \
        --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from markdown_section import write_section

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## ECoRAG reflection"
INTRO = """\
The reflection selector's two modes on the same split and scores, in one process
(`benchmarks/ecorag_reflection.py`). The offline evaluator (zero-shot SmolLM2-135M) never
reaches P(Yes) = 0.5 here, so at the paper's threshold every question runs all 5 steps. The
second run uses threshold 0.23, the median P(Yes) of the candidate sets of the first 5 questions
of the HotpotQA *train* sample (`tests/data/hotpotqa-train-sf100.json`), only to make the loop
stop early for some questions; it is not a tuned operating point."""
MODES = ("sequential", "batched")


def build(config: str, threshold: float | None) -> dict[str, Any]:
    """The compressor of ``config`` and one reflection selector per mode (sharing one model)."""
    from ragsift.config import load_config
    from ragsift.registry import build_plugin

    (compressor,) = load_config(config).build_compressors().values()
    spec = {"name": "reflection", **compressor.selector.config()}
    if threshold is not None:
        spec["judge"] = {**spec["judge"], "threshold": threshold}
    selectors = {mode: build_plugin("selector", {**spec, "mode": mode}) for mode in MODES}
    if "share_prefix" in spec["judge"]:  # causal evaluator: also the plain padded batch
        padded = {**spec, "mode": "batched", "judge": {**spec["judge"], "share_prefix": False}}
        selectors["batched-padded"] = build_plugin("selector", padded)
    compressor.warm_up()
    for selector in selectors.values():
        selector.warm_up()
    return {"compressor": compressor, "selectors": selectors}


def run(config: str, examples: int, source: str | None, threshold: float | None, repeats: int) -> dict[str, Any]:
    from ragsift.datasets import load_examples

    built = build(config, threshold)
    compressor, selectors = built["compressor"], built["selectors"]
    data = list(load_examples(source, limit=examples))
    prepared = []
    for ex in data:
        sentences = compressor.splitter.split_all(ex.documents)
        scores = np.asarray(compressor.scorer.score(ex, sentences), dtype=np.float64)
        prepared.append((ex, sentences, scores))
    # warm-up call (first-call allocations), not timed
    ex0, s0, sc0 = prepared[0]
    selectors["batched"].judge.probabilities(ex0.question, [[s0[0].text]])

    labels = list(selectors)
    rows: dict[str, dict[str, Any]] = {
        m: {"seconds": [], "calls": 0, "sets": 0, "k": [], "evidential": 0, "probabilities": []} for m in labels
    }
    loads = []
    for i, (ex, sentences, scores) in enumerate(prepared):
        best: dict[str, float] = {}
        kept: dict[str, list[int]] = {}
        infos: dict[str, dict[str, Any]] = {}
        for r in range(repeats):
            shift = (i * repeats + r) % len(labels)
            for mode in labels[shift:] + labels[:shift]:  # rotate which mode goes first
                t = time.perf_counter()
                selection = selectors[mode].select(ex, sentences, scores)
                best[mode] = min(best.get(mode, float("inf")), time.perf_counter() - t)
                assert kept.setdefault(mode, list(selection.kept)) == list(selection.kept), "not deterministic"
                infos[mode] = selection.info
        loads.append(os.getloadavg()[0])
        for mode in labels:
            assert kept[mode] == kept["sequential"], (
                f"example {ex.id}: '{mode}' kept different sentences than 'sequential'"
            )
            info, row = infos[mode], rows[mode]
            row["seconds"].append(best[mode])
            row["calls"] += info["judge_calls"]
            row["sets"] += info["sets_judged"]
            row["k"].append(info["chosen_k"])
            row["evidential"] += int(info["evidential"])
            row["probabilities"].extend(info["probabilities"])
        times = " ".join(f"{label} {best[label]:.2f}s" for label in labels)
        print(f"[{i + 1}/{len(prepared)}] {ex.id}: k={rows['sequential']['k'][-1]} {times}", file=sys.stderr)
    evaluator = selectors["sequential"].judge
    return {
        "load": statistics.mean(loads),
        "repeats": repeats,
        "rows": rows,
        "n": len(prepared),
        "sentences": sum(len(s) for _, s, _ in prepared),
        "judge": {
            "name": selectors["sequential"].params.judge["name"],
            "model": evaluator.params.model,
            "threshold": evaluator.params.threshold,
            "batch_size": evaluator.params.batch_size,
        },
        "step": selectors["sequential"].params.step,
        "max": selectors["sequential"].params.max_sentences,
    }


def report(result: dict[str, Any], command: str) -> str:
    rows = result["rows"]
    seq = sum(rows["sequential"]["seconds"])
    ks = collections.Counter(rows["sequential"]["k"])
    ev = result["judge"]
    lines = [
        f"`{command}`",
        "",
        f"{result['n']} examples ({result['sentences']} sentences), evaluator `{ev['name']}` `{ev['model']}` "
        f"(threshold {ev['threshold']}, batch_size {ev['batch_size']}), step {result['step']}, max {result['max']}; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {_threads()}, "
        f"mean 1-minute load average {result['load']:.1f} (other processes share the CPU: times are noisy); "
        f"each time is the fastest of {result['repeats']} run(s). "
        "Identical selections in every mode: asserted for every example. `batched` = one evaluator call per question "
        "(for the causal evaluator: the longest prompt once, the others reusing its KV cache for their shared prefix); "
        "`batched-padded` = the same call as plain left-padded batches.",
        "",
        "| mode | evaluator calls | sets judged | selection time, sum (s) | mean per question (s) | median (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in rows:
        r = rows[mode]
        lines.append(
            f"| {mode} | {r['calls']} | {r['sets']} | {sum(r['seconds']):.2f} | {statistics.mean(r['seconds']):.2f} | "
            f"{statistics.median(r['seconds']):.2f} |"
        )
    lines += [
        "",
        "Speed-up over sequential (total wall time): "
        + ", ".join(f"{m} {seq / sum(rows[m]['seconds']):.2f}x" for m in rows if m != "sequential") + ". "
        f"Chosen k: {', '.join(f'{k}: {c}' for k, c in sorted(ks.items()))}; "
        f"evidential set found for {rows['sequential']['evidential']} of {result['n']} questions. "
        f"P(evidential) over all sets judged in batched mode: {_quantiles(rows['batched']['probabilities'])}.",
    ]
    return "\n".join(lines)


def _quantiles(values: list[float]) -> str:
    q = np.quantile(np.asarray(values), [0.0, 0.25, 0.5, 0.75, 1.0])
    return "min {:.3f}, q1 {:.3f}, median {:.3f}, q3 {:.3f}, max {:.3f}".format(*q)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "ecorag-offline.toml"))
    parser.add_argument("--examples", type=int, default=10, help="first N examples")
    parser.add_argument("--input", help="dataset file (default: the bundled HotpotQA evaluation sample)")
    parser.add_argument("--threshold", type=float, action="append",
                        help="evaluator threshold(s) to run (repeatable; default: the config's)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per mode and example; the fastest counts")
    parser.add_argument("--write", metavar="FILE", help=f"replace the '{SECTION}' section of FILE with the results")
    args = parser.parse_args(argv)
    command = "python benchmarks/ecorag_reflection.py " + " ".join(argv if argv is not None else sys.argv[1:])
    bodies = []
    for threshold in args.threshold or [None]:
        result = run(args.config, args.examples, args.input, threshold, args.repeats)
        body = report(result, command)
        print(body)
        bodies.append(f"### Evaluator threshold {result['judge']['threshold']}\n\n" + body)
    if args.write:
        write_section(Path(args.write), SECTION, INTRO + "\n\n" + "\n\n".join(bodies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
