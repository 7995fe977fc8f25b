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
from ragsift.lm.prefix_tree import tree_plan, tree_tokens
from ragsift.lm.prompts import EncodedPrompt, single_token_id

__all__ = ["LlamaCppYesNoEngine", "LLAMA_LAYOUTS", "ROW_GROUP"]

#: llama.cpp's repacked CPU matrix kernels (Q4_0 / Q4_K / IQ4_NL "x8" and "x4" layouts) take
#: activation rows in groups of 4 and the rows left over through another kernel, whose rounding
#: differs (logits 0.3 apart on Qwen2.5-Coder-0.5B Q4_K_M); starting every evaluation at a
#: multiple of 4 groups each row as the whole prompt evaluated alone does, so the scores are
#: the same bit for bit (tested), for at most 3 tokens run again per prompt
ROW_GROUP = 4

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
        for word, token in ((positive, self.positive_id), (negative, self.negative_id)):
            if not 0 <= token < self.n_vocab:
                raise ConfigError(f"{owner}: the token id {token} of {word!r} lies outside the model's {self.n_vocab} logits.")
        #: counters of the last call (see the module docstring)
        self.stats: dict[str, Any] = {}
        #: the ids this engine left in the cache (reused only while the cache still holds them:
        #: another user of the model, such as a reader generating token by token, computes rows
        #: in other groups)
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
                else:
                    score = math.nan
                    cached = self._cached()
                    for step in tree_plan(ids, cached if cached == self._left else (), align=ROW_GROUP):
                        prompt = ids[step.index]
                        if step.keep < len(prompt):
                            score = self._extend(prompt, step.keep)
                        self.stats["reused_tokens"] += step.keep
                        out[step.index] = score
                self._left = self._cached()
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
        rest = list(ids[keep:])
        self.llm.eval(rest)  # n_batch tokens per llama_decode; logits of the last token only
        self.stats["forward_passes"] += -(-len(rest) // int(self.llm.n_batch))
        self.stats["tokens"] += len(rest)
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
