"""The Yes/No engine on llama.cpp: P(positive) / (P(positive) + P(negative)) of the next token
after each prompt, for a GGUF model run in-process (``llama-cpp-python``).

The same interface as the torch :class:`~ragsift.lm.engine.YesNoEngine` (``probabilities``,
``positive_id`` / ``negative_id``, ``stats``), so EXIT's scorer and the causal judge take either
(their ``backend`` param). The score is ``sigmoid(l_pos - l_neg)`` in fp32 of the two tokens'
logits in the full next-token row that llama.cpp computes at the last prompt position (the
softmax over the whole vocabulary restricted to the two tokens; no top-k list is involved).

Layouts (docs/exit.md, "The llama.cpp engine"):

- ``prefix-tree`` (the torch layouts ``auto``, ``trunk`` and ``packed`` map here): one KV-cache
  sequence, cut back (``llama_memory_seq_rm``, exact: the kept positions' key/value states are
  untouched) and extended, the prompts visited depth first in their prefix tree
  (:mod:`ragsift.lm.prefix_tree`): a document's head and context run once and each sentence runs
  as a suffix after them; nested evidence sets run each after the previous one. The cache is
  kept between calls, so a call's first prompt also reuses what it shares with the last prompt
  of the call before (the reflection's sequential loop: each set after the previous one).
- ``separate`` (the torch layout ``padded``): every prompt from an empty cache (the reference the
  tree is tested against: same scores to 1e-4).

Both cut their evaluations into batches that llama.cpp's CPU kernels compute alike (``ROW_GROUP``,
``MIN_BATCH`` below), which is what makes the tree's scores equal the separate run's.

``stats`` after each call: ``forward_passes`` (``llama_decode`` calls), ``tokens`` (tokens
evaluated), ``reused_tokens`` (prompt tokens found in the cache), ``tree_tokens`` (the prompt
tree's distinct tokens: the fewest any evaluation can run) and ``layout``. Prompts longer than
the context window are refused (:class:`PromptTooLongError`), never cut: the prompt builders
size them to ``max_length``, which the backend makes the window.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.lm.prefix_tree import eval_chunks, tree_plan, tree_tokens
from ragsift.lm.prompts import EncodedPrompt, single_token_id

__all__ = ["LlamaCppYesNoEngine", "LLAMA_LAYOUTS", "ROW_GROUP", "MIN_BATCH"]

#: Batch shapes that llama.cpp's CPU kernels round alike (measured on this build, Qwen2.5-Coder-0.5B
#: Q4_K_M; docs/exit.md, "The llama.cpp engine"): the repacked Q4_K/Q4_0 weights take activation
#: rows in groups of 4 from the batch's start and the leftover rows one by one, and a batch of
#: fewer than 8 tokens goes through other kernels altogether; either difference moved logits by up
#: to 0.4. Every batch here starts at a multiple of ROW_GROUP and holds at least MIN_BATCH tokens
#: (or the whole prompt), and rows made in a shorter batch are never kept, so each row is computed
#: as when its prompt runs alone from an empty cache, cut into batches by the same rule: the
#: scores are equal bit for bit (tested).
ROW_GROUP = 4
MIN_BATCH = 8

#: the engine's layouts; the torch layout names are accepted too (``padded`` = ``separate``, the others = ``prefix-tree``)
LLAMA_LAYOUTS: tuple[str, ...] = ("prefix-tree", "separate")
_FROM_TORCH = {"auto": "prefix-tree", "trunk": "prefix-tree", "packed": "prefix-tree", "padded": "separate"}


class LlamaCppYesNoEngine:
    """Two-way next-token probabilities of a GGUF model loaded by llama.cpp."""

    def __init__(self, llm: Any, tokenizer: Any, positive: str = "Yes", negative: str = "No", *,
                 lock: threading.Lock | None = None, owner: str = "LlamaCppYesNoEngine") -> None:
        self.llm, self.tokenizer, self.owner = llm, tokenizer, owner
        self.model = llm  # what the torch engine calls its model (the score cache and describe read it)
        self.lock = lock if lock is not None else threading.Lock()
        self.positive_id = single_token_id(tokenizer, positive, owner)
        self.negative_id = single_token_id(tokenizer, negative, owner)
        self.n_vocab = int(llm.n_vocab())
        #: ids per llama_decode call (one micro-batch each), a multiple of ROW_GROUP
        ubatch = min(int(llm.n_batch), int(getattr(llm.context_params, "n_ubatch", llm.n_batch)))
        self.batch = ubatch - ubatch % ROW_GROUP
        if self.batch < 2 * MIN_BATCH:
            raise ConfigError(f"{owner}: llama.cpp's batch of {ubatch} tokens is too small; it needs at least {2 * MIN_BATCH}.")
        for word, token in ((positive, self.positive_id), (negative, self.negative_id)):
            if not 0 <= token < self.n_vocab:
                raise ConfigError(f"{owner}: the token id {token} of {word!r} lies outside the model's {self.n_vocab} logits.")
        #: counters of the last call (see the module docstring)
        self.stats: dict[str, Any] = {}
        #: the cached ids this engine may keep next time (only while the cache still starts with
        #: them: another user of the model, such as a reader generating token by token, computes
        #: rows in other batches)
        self._left: list[int] = []

    @property
    def context_window(self) -> int:
        return int(self.llm.n_ctx())

    # -- choosing a layout ------------------------------------------------------------------
    def unsupported(self, layout: str, prompts: Sequence[EncodedPrompt]) -> str | None:
        """Why the model cannot run ``layout`` on ``prompts``; None when it can."""
        if layout == "separate":
            return None
        from ragsift.lm.llamacpp_model import import_llama_cpp

        llama_cpp = import_llama_cpp()
        if llama_cpp.llama_model_is_recurrent(self.llm.model) or llama_cpp.llama_model_is_hybrid(self.llm.model):
            return "the prefix-tree layout needs a KV cache that can be cut back; this model's state is recurrent"
        window = int(llama_cpp.llama_model_n_swa(self.llm.model))
        longest = max(len(p) for p in prompts)
        if window > 0 and longest > window:
            return (f"the prefix-tree layout cannot cut back the cache of the model's sliding attention window "
                    f"({window} tokens) under a {longest}-token prompt")
        return None

    def choose_layout(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> str:
        """The engine layout for ``layout`` (an engine or a torch layout name); a layout the model
        cannot run is refused when asked for by name, and ``auto`` falls back to ``separate``."""
        name = _FROM_TORCH.get(layout, layout)
        if name not in LLAMA_LAYOUTS:
            raise ConfigError(f"{self.owner}: unknown layout {layout!r}; choose {', '.join(LLAMA_LAYOUTS)} "
                              f"(or a torch layout name: {', '.join(_FROM_TORCH)}).")
        why = self.unsupported(name, prompts)
        if why is None:
            return name
        if layout == "auto":
            self.stats["skipped"] = {name: why}
            return "separate"
        raise ConfigError(f"{self.owner}: {why}; {hint or 'use the separate layout for this model'}.")

    # -- probabilities ----------------------------------------------------------------------
    def probabilities(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "",
                      readout: tuple[Any, float] | None = None) -> np.ndarray:
        """P(positive) over {positive, negative} after each prompt, in the order given (float64
        array of fp32 values)."""
        if readout is not None:
            raise ConfigError(f"{self.owner}: a trained readout needs the torch backend (the final hidden "
                              "states); the llama-cpp backend scores the Yes/No logits only.")
        ids = [p.ids for p in prompts]
        self.stats = {"forward_passes": 0, "tokens": 0, "reused_tokens": 0, "tree_tokens": tree_tokens(ids)}
        if not prompts:
            self.stats["layout"] = _FROM_TORCH.get(layout, layout)
            return np.zeros(0)
        window = self.context_window
        for i, prompt in enumerate(ids):
            if not prompt:
                raise ConfigError(f"{self.owner}: prompt {i} has no tokens.")
            if len(prompt) > window:
                raise PromptTooLongError(
                    f"{self.owner}: prompt {i} has {len(prompt)} tokens but the llama.cpp context window is "
                    f"{window}; nothing is cut: raise max_length (the window follows it, up to the model's "
                    f"training context) or give shorter input."
                )
        chosen = self.choose_layout(prompts, layout, hint)
        self.stats["layout"] = chosen
        out = np.empty(len(prompts), dtype=np.float64)
        with self.lock:
            try:
                if chosen == "separate":
                    for i, prompt in enumerate(ids):
                        self._clear()
                        out[i] = self._extend(prompt, 0)
                    last = ids[-1]
                    self._left = list(last) if len(last) >= MIN_BATCH else []
                else:
                    score = math.nan
                    left = self._left
                    reusable = left if self._cached()[: len(left)] == left else []
                    plan = tree_plan(ids, reusable, align=ROW_GROUP, min_run=MIN_BATCH)
                    for step in plan.steps:
                        prompt = ids[step.index]
                        if step.keep < len(prompt):
                            score = self._extend(prompt, step.keep)
                        self.stats["reused_tokens"] += step.keep
                        out[step.index] = score
                    self._left = list(plan.reusable)
            except BaseException:
                self._clear()  # an interrupted evaluation leaves no half-known cache behind
                raise
        return out

    def hidden_states(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> np.ndarray:
        """Refused: the final hidden states (what readout trainers fit on) come from the torch backend."""
        raise ConfigError(f"{self.owner}: the final hidden states (readouts and their trainers) need the torch "
                          "backend; set backend = \"torch\" (a GGUF file is then dequantised for transformers).")

    # -- the model ----------------------------------------------------------------------------
    def _cached(self) -> list[int]:
        """The ids whose key/value states the cache holds (llama-cpp-python tracks them)."""
        return [int(t) for t in self.llm.input_ids[: self.llm.n_tokens]]

    def _clear(self) -> None:
        self.llm._ctx.kv_cache_clear()
        self.llm.n_tokens = 0
        self._left = []

    def _extend(self, ids: Sequence[int], keep: int) -> float:
        """Cut the cache back to its first ``keep`` positions, evaluate ``ids[keep:]`` after them,
        and return the two-way probability at the last position."""
        if keep > self.llm.n_tokens:
            raise RuntimeError(f"{self.owner}: cannot keep {keep} cached positions; the cache holds {self.llm.n_tokens}")
        if not self.llm._ctx.kv_cache_seq_rm(0, keep, -1):
            raise ConfigError(f"{self.owner}: llama.cpp could not cut this model's KV cache back to {keep} positions; "
                              "use the separate layout (mode = \"reference\" / share_prefix = false).")
        self.llm.n_tokens = keep
        for start, end in eval_chunks(keep, len(ids), self.batch, ROW_GROUP, MIN_BATCH):
            self.llm.eval(list(ids[start:end]))  # one llama_decode (a micro-batch); logits of the last id only
            self.stats["forward_passes"] += 1
            self.stats["tokens"] += end - start
        row = self.llm._ctx.get_logits_ith(-1)  # the full next-token row (n_vocab floats)
        positive, negative = np.float32(row[self.positive_id]), np.float32(row[self.negative_id])
        if not (np.isfinite(positive) and np.isfinite(negative)):
            raise RuntimeError(f"{self.owner}: llama.cpp returned non-finite logits ({positive}, {negative})")
        return _sigmoid32(positive - negative)


def _sigmoid32(x: np.float32) -> float:
    """``1 / (1 + exp(-x))`` in fp32 without overflow (as torch's sigmoid)."""
    one = np.float32(1.0)
    if x >= 0:
        return float(one / (one + np.exp(-x, dtype=np.float32)))
    z = np.exp(x, dtype=np.float32)
    return float(z / (one + z))
