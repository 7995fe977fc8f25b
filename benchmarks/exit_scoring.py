"""EXIT sentence scoring: the authors' batching vs ragsift's prefix-shared scoring.

Same process, same model (the offline SmolLM2-135M-Instruct of ``configs/exit-offline.toml``,
CPU, fp32), same prompts, on the first N examples of the bundled HotpotQA sample (10 documents
each). Rows:

- ``reference``: ragsift's ``mode = "reference"``: the authors' batching (8 complete prompts
  per forward pass, left padding, pad = eos), next-token logits at the last position only;
- ``authors-call``: the same batches run exactly as the authors' code calls the model
  (``model(input_ids, attention_mask)``: default positions, logits at EVERY position);
- ``prefix-shared``: ragsift's default mode.

Modes alternate inside every repeat so that load from other processes hits all of them alike.
Reported: tokens run through the model (padding included), forward passes, wall time and CPU
time of this process (medians over repeats), sentences/s, peak growth of the C heap in use during
the mode (glibc mallinfo2, sampled every 2 ms), max |score difference| against ``reference``,
and speed-ups. This script only measures speed: nothing is
tuned on the evaluation sample.

    python benchmarks/exit_scoring.py --examples 10 --repeats 2 --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
from markdown_section import write_section

from ragsift.openmp import prefer_passive_wait

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## EXIT scoring"


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


class PeakMemory:
    """Peak growth (MiB) of the C heap in use while the block runs, sampled every 2 ms.

    glibc's ``mallinfo2`` (bytes allocated and not freed, mmapped chunks included) sees torch's
    CPU tensors, which tracemalloc does not, and unlike the process RSS it drops when memory is
    freed, so modes run one after another are measured alike. Falls back to RSS growth.
    """

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallinfo2.restype = _MallInfo2
            self._mallinfo = libc.mallinfo2
            self.kind = "heap in use (glibc mallinfo2)"
        except (OSError, AttributeError):
            self._mallinfo = None
            self.kind = "RSS"

    def _now(self) -> int:
        if self._mallinfo is not None:
            info = self._mallinfo()
            return int(info.uordblks + info.hblkhd)
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> PeakMemory:
        self.base = self.peak = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._now())

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._now())

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.base) / 2**20


def authors_call_scores(scorer: Any, prompts: list[Any], batch_size: int) -> tuple[np.ndarray, int, int]:
    """The authors' model call on the reference batches: default positions, full logits."""
    import torch

    from ragsift.lm import two_way_probability
    from ragsift.lm.layouts import chunks, padded_batch

    model, engine = scorer._model, scorer.engine
    out, tokens, passes = [], 0, 0
    with torch.inference_mode():
        for rows in chunks(len(prompts), batch_size):
            ids, mask, _ = padded_batch([prompts[i].ids for i in rows], engine.pad_id)
            logits = model(input_ids=ids, attention_mask=mask).logits[:, -1, :]
            yes, no = logits[:, engine.positive_id], logits[:, engine.negative_id]
            out.append(two_way_probability(yes, no).double().numpy())
            tokens += ids.numel()
            passes += 1
    return np.concatenate(out), tokens, passes


def token_counts(prompts: list[Any], batch_size: int) -> tuple[int, int]:
    """Tokens each mode runs through the model for these prompts, counted without the model:
    reference = every batch padded to its longest prompt; prefix-shared = the shared start once,
    each document's rest of prefix once, every suffix once."""
    from ragsift.lm.layouts import layout_tokens

    return layout_tokens(prompts, "padded", batch_size), layout_tokens(prompts, "packed", batch_size)


def token_census(scorer: Any, batch_size: int) -> str:
    """The reference / prefix-shared token ratio of every example of the bundled file: the
    speed-up to expect where both modes cost the same per token."""
    from ragsift.datasets import load_examples
    from ragsift.splitters.sentencizer import SentencizerSplitter

    splitter = SentencizerSplitter()
    pairs = [
        token_counts(scorer.prompts(ex, splitter.split_all(ex.documents)), batch_size) for ex in load_examples(None)
    ]
    ratios = np.array([ref / shared for ref, shared in pairs])
    reference, shared = sum(r for r, _ in pairs), sum(s for _, s in pairs)
    return (
        f"Token census of all {len(pairs)} examples of the bundled file (counted, not run): reference / prefix-shared "
        f"token ratio median {np.median(ratios):.2f}, mean {ratios.mean():.2f}, min {ratios.min():.2f}, "
        f"max {ratios.max():.2f}; {reference:,} vs {shared:,} tokens in all ({reference / shared:.2f}x)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=10, help="first N examples of the bundled HotpotQA sample")
    parser.add_argument(
        "--max-sentences", type=int, help="score only the first N sentences of each example (smoke runs)"
    )
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats of every mode (median reported)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--config", default=str(ROOT / "configs" / "exit-offline.toml"), help="the scorer's config")
    parser.add_argument("--no-authors-call", action="store_true", help="skip the authors-call row (slowest)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--openmp-default", action="store_true",
                        help="leave OMP_WAIT_POLICY to the OpenMP runtime (default: PASSIVE unless the environment sets it)")
    parser.add_argument("--write", metavar="FILE", help=f"replace the '{SECTION}' section of FILE with the results")
    args = parser.parse_args(argv)
    if not args.openmp_default:
        prefer_passive_wait()  # this benchmark owns its process: OMP_WAIT_POLICY=PASSIVE before torch loads, unless set
    policy = os.environ.get("OMP_WAIT_POLICY", "the OpenMP runtime's default")

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from ragsift.datasets import load_examples
    from ragsift.registry import build_plugin
    from ragsift.splitters.sentencizer import SentencizerSplitter

    spec = dict(tomllib.loads(Path(args.config).read_text())["compressor"]["scorer"])
    spec.update(batch_size=args.batch_size, device="cpu", dtype="fp32")
    scorers = {mode: build_plugin("scorer", {**spec, "mode": mode}) for mode in ("reference", "prefix-shared")}
    for scorer in scorers.values():
        scorer.warm_up()  # models.py caches: both hold the same model object
    assert scorers["reference"]._model is scorers["prefix-shared"]._model

    splitter = SentencizerSplitter()
    examples = [
        (ex, splitter.split_all(ex.documents)[: args.max_sentences]) for ex in load_examples(None, limit=args.examples)
    ]
    n_sentences = sum(len(s) for _, s in examples)
    # warm-up pass (first-call allocations), not timed
    scorers["prefix-shared"].score(examples[0][0], examples[0][1][:2])
    scorers["reference"].score(examples[0][0], examples[0][1][:2])

    modes = ["reference", "prefix-shared"] + ([] if args.no_authors_call else ["authors-call"])
    times: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    peaks: dict[str, float] = {m: 0.0 for m in modes}
    tokens: dict[str, int] = {}
    passes: dict[str, int] = {}
    scores: dict[str, np.ndarray] = {}
    memory_kind = PeakMemory().kind
    # the census below counts with the same rule: every timed run is checked against it (counted
    # here, outside the timed runs)
    counted = np.array(
        [token_counts(scorers["reference"].prompts(ex, sentences), args.batch_size) for ex, sentences in examples]
    ).sum(0)
    expected_tokens = {"reference": int(counted[0]), "prefix-shared": int(counted[1]), "authors-call": int(counted[0])}
    for repeat in range(args.repeats):
        for mode in modes:
            if mode == "authors-call" and repeat > 0:
                continue  # the slowest row runs once
            per_example, tok, fwd = [], 0, 0
            with PeakMemory() as mem:
                start, start_cpu = time.perf_counter(), time.process_time()
                for ex, sentences in examples:
                    if mode == "authors-call":
                        ref = scorers["reference"]
                        s, t, f = authors_call_scores(ref, ref.prompts(ex, sentences), args.batch_size)
                    else:
                        scorer = scorers[mode]
                        s = scorer.score(ex, sentences)
                        t, f = scorer.stats["tokens"], scorer.stats["forward_passes"]
                    per_example.append(s)
                    tok += t
                    fwd += f
                times[mode].append(time.perf_counter() - start)
                cpu[mode].append(time.process_time() - start_cpu)
            assert tok == expected_tokens[mode], (mode, tok, expected_tokens[mode])
            peaks[mode] = max(peaks[mode], mem.growth_mib)
            tokens[mode], passes[mode], scores[mode] = tok, fwd, np.concatenate(per_example)
            print(f"[{repeat}] {mode}: {times[mode][-1]:.1f} s wall, {cpu[mode][-1]:.1f} s CPU", file=sys.stderr)

    base = statistics.median(times["reference"])
    base_cpu = statistics.median(cpu["reference"])
    lines = [
        f"Command: `python benchmarks/exit_scoring.py --examples {args.examples} --repeats {args.repeats}"
        f" --batch-size {args.batch_size}"
        + (f" --threads {args.threads}" if args.threads else "")
        + (f" --max-sentences {args.max_sentences}" if args.max_sentences else "")
        + (" --no-authors-call" if args.no_authors_call else "")
        + (" --openmp-default" if args.openmp_default else "")
        + "`  ",
        f"Model: `{spec['model']}` (SmolLM2-135M-Instruct, fp32, CPU, {torch.get_num_threads()} torch threads), "
        f"template of `{Path(args.config).name}`; {args.examples} HotpotQA examples, {n_sentences} sentences "
        f"(sentencizer); median over {args.repeats} repeat(s) (authors-call: 1 run); torch {torch.__version__}, "
        f"{os.cpu_count()} CPUs shared with other work (CPU time is the steadier figure); OMP_WAIT_POLICY: {policy}.",
        "",
        "| mode | tokens through the model | forward passes | wall time (s) | CPU time (s) | sentences/s (wall) | "
        f"peak {memory_kind} growth (MiB) | max abs score diff vs reference | speed-up vs reference (wall / CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in modes:
        wall, used = statistics.median(times[mode]), statistics.median(cpu[mode])
        diff = float(np.abs(scores[mode] - scores["reference"]).max())
        lines.append(
            f"| {mode} | {tokens[mode]:,} | {passes[mode]} | {wall:.1f} | {used:.1f} | {n_sentences / wall:.2f} | "
            f"{peaks[mode]:.0f} | {diff:.2e} | {base / wall:.2f}x / {base_cpu / used:.2f}x |"
        )
    lines.append("")
    lines.append(f"Token ratio reference / prefix-shared: {tokens['reference'] / tokens['prefix-shared']:.2f}.")
    if "authors-call" in modes:
        lines[-1] += (
            " prefix-shared vs authors-call: "
            f"{statistics.median(times['authors-call']) / statistics.median(times['prefix-shared']):.2f}x wall, "
            f"{statistics.median(cpu['authors-call']) / statistics.median(cpu['prefix-shared']):.2f}x CPU."
        )
    lines.append(token_census(scorers["prefix-shared"], args.batch_size))
    lines.append(
        "All wall times (s): " + "; ".join(f"{m}: " + ", ".join(f"{t:.1f}" for t in times[m]) for m in modes) + "."
    )
    lines += [
        "",
        "Rows: `reference` = ragsift's `mode = \"reference\"`, the EXIT authors' batching "
        f"({args.batch_size} complete prompts per forward pass, left padding, pad = eos) with next-token logits "
        "at the last position only; `authors-call` = "
        "the same batches called as the authors' code does (default positions, logits at every position, "
        "then the last one taken); `prefix-shared` = ragsift's default (query head once per example into a KV "
        f"cache; then per document one packed pass of its context and up to {args.batch_size} of its sentence "
        "suffixes, with a block attention mask). Tokens include padding. "
        "Score differences are fp32 rounding.",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        write_section(Path(args.write), SECTION, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
