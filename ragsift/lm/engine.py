"""The Yes/No engine: P(positive) / (P(positive) + P(negative)) of the next token after each prompt.

Every component that asks a causal LM a two-way question uses it (EXIT's scorer, the causal
judge, trainers, baselines): ``sigmoid(l_pos - l_neg)`` in fp32 from the next-token logits.
Policy for models that cannot share prefixes (docs/exit.md, "Modes"): a layout asked for by name
that the model cannot run is refused, saying why; ``auto`` runs the supported layout that needs
the fewest tokens (``padded`` on ties and when nothing else runs) and records it in ``stats``.
Readouts: with ``readout = (v, b)`` the score is ``sigmoid(v . h + b)`` of the final hidden state
``h`` at the last prompt position (the input of the model's output layer, captured in the same
forward pass, so every layout applies unchanged); ``v = w_pos - w_neg`` of the output layer and
``b = 0`` is the two-way probability itself. :meth:`YesNoEngine.hidden_states` returns ``h``
(what the readout trainer fits on).

The only model call is :class:`~ragsift.lm.causal_call.CausalLMCall` (shared with the token
log-probability engine); what a call computes per prompt (the two-way probability, a readout, the
hidden states) is a :class:`_Head` passed down the call, so one engine serves concurrent calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragsift.errors import ConfigError
from ragsift.lm.causal_call import CausalLMCall
from ragsift.lm.layouts import (
    Segment,
    chunks,
    common_prefix_length,
    layout_tokens,
    packed_segments,
    padded_batch,
    shared_prefix_groups,
    trunk_plan,
)
from ragsift.lm.prompts import EncodedPrompt, single_token_id

__all__ = ["YesNoEngine", "Layout", "LAYOUTS", "two_way_probability"]

Layout = Literal["auto", "padded", "trunk", "packed"]
#: the concrete layouts, in the order ``auto`` prefers them on equal token counts
LAYOUTS: tuple[str, ...] = ("padded", "trunk", "packed")


def two_way_probability(positive_logits: Any, negative_logits: Any) -> Any:
    """``exp(p) / (exp(p) + exp(n))`` = ``sigmoid(p - n)`` per row, in fp32."""
    import torch

    return torch.sigmoid(positive_logits.float() - negative_logits.float())


@dataclass(frozen=True)
class _Head:
    """What one call computes per prompt from its kept rows: ``apply`` of the logits, or of the
    final hidden states when ``hidden``; each result has shape ``width``."""

    apply: Callable[[Any], Any]
    hidden: bool = False
    width: tuple[int, ...] = ()


class YesNoEngine:
    """Two-way next-token probabilities of a causal LM already in memory."""

    def __init__(self, model: Any, tokenizer: Any, positive: str = "Yes", negative: str = "No", *,
                 batch_size: int = 8, owner: str = "YesNoEngine") -> None:
        self.model, self.tokenizer, self.batch_size, self.owner = model, tokenizer, batch_size, owner
        self.positive_id = single_token_id(tokenizer, positive, owner)
        self.negative_id = single_token_id(tokenizer, negative, owner)
        # pad = eos (the EXIT authors' choice), else the pad token: padded positions are masked, so
        # the id never changes a probability
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self._call = CausalLMCall(model)
        embeddings = model.get_input_embeddings().weight
        self.device, self.activation_dtype = embeddings.device, embeddings.dtype
        #: counters of the last call: forward passes, tokens run (padding included), layout used
        self.stats: dict[str, Any] = {}

    # -- choosing a layout ------------------------------------------------------------------
    def unsupported(self, layout: str, prompts: Sequence[EncodedPrompt]) -> str | None:
        """Why the model cannot run ``layout`` on ``prompts``; None when it can."""
        if layout == "padded":
            return None
        config = self.model.config
        window = int(getattr(config, "sliding_window", None) or 0)
        layer_types = getattr(config, "layer_types", None) or []
        sliding = window > 0 and (not layer_types or any("sliding" in t for t in layer_types))
        longest = max(len(p) for p in prompts)
        if sliding and longest > window:
            return (f"the {layout} layout cannot apply the model's sliding attention window ({window} tokens) "
                    f"to a {longest}-token prompt")
        layers = getattr(self._new_cache(), "layers", None) or []
        odd = sorted({type(layer).__name__ for layer in layers} - {"DynamicLayer", "DynamicSlidingWindowLayer"})
        if odd:
            return f"the {layout} layout needs a KV cache that can be cut back; the model's has {', '.join(odd)} layers"
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        if layout == "packed" and implementation.startswith("flash"):
            return (f"the packed layout needs an attention implementation that takes a 4-D mask (sdpa or eager); "
                    f"the model uses {implementation!r}")
        return None

    def choose_layout(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> str:
        """``layout`` itself (refused when the model cannot run it), or for ``auto`` the
        supported layout that runs the fewest tokens."""
        if layout != "auto":
            if layout not in LAYOUTS:
                raise ConfigError(f"{self.owner}: unknown layout {layout!r}; choose auto, {', '.join(LAYOUTS)}.")
            why = self.unsupported(layout, prompts)
            if why is not None:
                raise ConfigError(f"{self.owner}: {why}; {hint or 'use the padded layout for this model'}.")
            return layout
        costs, skipped = {}, {}
        for name in LAYOUTS:
            why = self.unsupported(name, prompts)
            if why is None:
                costs[name] = layout_tokens(prompts, name, self.batch_size)
            else:
                skipped[name] = why
        self.stats["skipped"] = skipped
        return min(costs, key=lambda name: (costs[name], LAYOUTS.index(name)))

    # -- probabilities ----------------------------------------------------------------------
    def probabilities(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "",
                      readout: tuple[Any, float] | None = None) -> np.ndarray:
        """P(positive) over {positive, negative} after each prompt, in the order given (float64
        array of fp32 values); with ``readout = (vector, bias)`` instead ``sigmoid(vector . h + bias)``
        of the last position's final hidden state. ``hint`` ends the message refusing a layout the
        model cannot run."""
        import torch

        if readout is None:
            return self._run(prompts, layout, hint, _Head(self._two_way))
        vector = torch.as_tensor(readout[0], dtype=torch.float32).to(self.device).reshape(-1)
        hidden_size = self.model.get_output_embeddings().weight.shape[1]
        if vector.numel() != hidden_size:
            raise ConfigError(f"{self.owner}: the readout vector has {vector.numel()} values; the model's hidden size is {hidden_size}.")
        bias = float(readout[1])
        return self._run(prompts, layout, hint, _Head(lambda h: torch.sigmoid(h.float() @ vector + bias).cpu(), hidden=True))

    def hidden_states(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> np.ndarray:
        """The final hidden state at each prompt's last position (``[len(prompts), hidden]``, fp32
        values in float64): what the output layer turns into the next-token logits."""
        hidden_size = self.model.get_output_embeddings().weight.shape[1]
        return self._run(prompts, layout, hint, _Head(lambda h: h.float().cpu(), hidden=True, width=(hidden_size,)))

    def _run(self, prompts: Sequence[EncodedPrompt], layout: str, hint: str, head: _Head) -> np.ndarray:
        import torch

        self.stats = {"forward_passes": 0, "tokens": 0}
        if not prompts:
            return np.zeros((0, *head.width))
        chosen = self.choose_layout(prompts, layout, hint)
        self.stats["layout"] = chosen
        run = {"padded": self._padded, "trunk": self._trunk, "packed": self._packed}[chosen]
        with torch.inference_mode():
            return run(prompts, head).double().cpu().numpy()

    def _two_way(self, logits: Any) -> Any:
        return two_way_probability(logits[:, self.positive_id], logits[:, self.negative_id]).cpu()

    @staticmethod
    def _output(n: int, head: _Head) -> Any:
        import torch

        return torch.empty(n, *head.width, dtype=torch.float32)

    def _padded(self, prompts: Sequence[EncodedPrompt], head: _Head) -> Any:
        out = self._output(len(prompts), head)
        for rows in chunks(len(prompts), self.batch_size):
            ids, mask, positions = padded_batch([prompts[i].ids for i in rows], self.pad_id, self.device)
            logits = self._call(ids, attention_mask=mask, position_ids=positions, keep=1, hidden=head.hidden)[:, -1]
            out[rows.start : rows.stop] = head.apply(logits)
            self._count(ids.numel())
        return out

    def _trunk(self, prompts: Sequence[EncodedPrompt], head: _Head) -> Any:
        ids = [p.ids for p in prompts]
        out = self._output(len(prompts), head)
        trunk, rest = trunk_plan(ids)
        cache = self._new_cache()
        out[trunk] = head.apply(self._extend(cache, ids[trunk], 0, head))[0]
        for i, start in rest:
            self._crop(cache, start)
            out[i] = head.apply(self._extend(cache, ids[i][start:], start, head))[0]
        return out

    def _packed(self, prompts: Sequence[EncodedPrompt], head: _Head) -> Any:
        out = self._output(len(prompts), head)
        groups = shared_prefix_groups(prompts)
        # the start every prompt shares: once per call, into the cache
        n_root = common_prefix_length([g.prefix for g in groups])
        cache = self._new_cache()
        self._extend(cache, groups[0].prefix[:n_root], 0, head)
        for group in groups:
            # the rest of the group's prefix runs in the first pass, packed in front of up to
            # batch_size of its suffixes; later passes find it in the cache
            n_prefix = len(group.prefix)
            context = [Segment(group.prefix[n_root:], ((0, n_root),), n_root)] if n_prefix > n_root else []
            for part in chunks(len(group.suffixes), self.batch_size):
                suffixes = [Segment(group.suffixes[j], ((0, n_prefix),), n_prefix) for j in part]
                packed = packed_segments(cache.get_seq_length(), context + suffixes, self.activation_dtype, self.device)
                logits = self._call(packed.input_ids, attention_mask=packed.attention_mask,
                                    position_ids=packed.position_ids, keep=packed.last[len(context):], cache=cache,
                                    hidden=head.hidden)[0]
                out[[group.members[j] for j in part]] = head.apply(logits)
                self._count(packed.input_ids.shape[1])
                self._crop(cache, n_prefix)
                context = []
            self._crop(cache, n_root)
        return out

    # -- cache and counters -----------------------------------------------------------------
    def _extend(self, cache: Any, ids: Sequence[int], start: int, head: _Head) -> Any:
        """Run ``ids`` (positions ``start``...) causally on top of ``cache``, growing it; the
        next-token logits ``[1, vocab]`` after the last id (the hidden state when ``head`` reads
        them; None for no ids)."""
        import torch

        if not ids:
            return None
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        positions = torch.arange(start, start + len(ids), device=self.device).unsqueeze(0)
        logits = self._call(input_ids, attention_mask=None, position_ids=positions, keep=1, cache=cache, hidden=head.hidden)
        self._count(len(ids))
        return logits[:, -1]

    @staticmethod
    def _crop(cache: Any, length: int) -> None:
        """Drop cached positions from ``length`` on (negative crop = tokens to drop, old and new API)."""
        extra = cache.get_seq_length() - length
        if extra > 0:
            cache.crop(-extra)

    def _new_cache(self) -> Any:
        from transformers import DynamicCache

        try:
            return DynamicCache(config=self.model.config)
        except TypeError:  # transformers < 4.56 takes no config
            return DynamicCache()

    def _count(self, tokens: int) -> None:
        self.stats["forward_passes"] += 1
        self.stats["tokens"] += int(tokens)
