"""The Yes/No engine: P(positive) / (P(positive) + P(negative)) of the next token after each prompt.

Every component that asks a causal LM a two-way question uses it (EXIT's scorer, the causal
judge, trainers, baselines): ``sigmoid(l_pos - l_neg)`` in fp32 from the next-token logits.
Policy for models that cannot share prefixes (docs/exit.md, "Modes"): a layout asked for by name
that the model cannot run is refused, saying why; ``auto`` runs the supported layout that needs
the fewest tokens (``padded`` on ties and when nothing else runs) and records it in ``stats``.
The only model call is :meth:`YesNoEngine._next_token_logits`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ragsift.errors import ConfigError
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
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        forward_params = inspect.signature(base.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"
        self._can_keep_logits = "logits_to_keep" in forward_params
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
    def probabilities(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> np.ndarray:
        """P(positive) over {positive, negative} after each prompt, in the order given (float64
        array of fp32 values). ``hint`` ends the message refusing a layout the model cannot run."""
        import torch

        self.stats = {"forward_passes": 0, "tokens": 0}
        if not prompts:
            return np.zeros(0)
        chosen = self.choose_layout(prompts, layout, hint)
        self.stats["layout"] = chosen
        run = {"padded": self._padded, "trunk": self._trunk, "packed": self._packed}[chosen]
        with torch.inference_mode():
            return run(prompts).double().cpu().numpy()

    def _probability(self, logits: Any) -> Any:
        return two_way_probability(logits[:, self.positive_id], logits[:, self.negative_id]).cpu()

    def _padded(self, prompts: Sequence[EncodedPrompt]) -> Any:
        import torch

        out = torch.empty(len(prompts), dtype=torch.float32)
        for rows in chunks(len(prompts), self.batch_size):
            ids, mask, positions = padded_batch([prompts[i].ids for i in rows], self.pad_id, self.device)
            logits = self._next_token_logits(ids, attention_mask=mask, position_ids=positions, keep=1)[:, -1]
            out[rows.start : rows.stop] = self._probability(logits)
            self._count(ids.numel())
        return out

    def _trunk(self, prompts: Sequence[EncodedPrompt]) -> Any:
        import torch

        ids = [p.ids for p in prompts]
        out = torch.empty(len(prompts), dtype=torch.float32)
        trunk, rest = trunk_plan(ids)
        cache = self._new_cache()
        out[trunk] = self._probability(self._extend(cache, ids[trunk], 0))[0]
        for i, start in rest:
            self._crop(cache, start)
            out[i] = self._probability(self._extend(cache, ids[i][start:], start))[0]
        return out

    def _packed(self, prompts: Sequence[EncodedPrompt]) -> Any:
        import torch

        out = torch.empty(len(prompts), dtype=torch.float32)
        groups = shared_prefix_groups(prompts)
        # the start every prompt shares: once per call, into the cache
        n_root = common_prefix_length([g.prefix for g in groups])
        cache = self._new_cache()
        self._extend(cache, groups[0].prefix[:n_root], 0)
        for group in groups:
            # the rest of the group's prefix runs in the first pass, packed in front of up to
            # batch_size of its suffixes; later passes find it in the cache
            n_prefix = len(group.prefix)
            context = [Segment(group.prefix[n_root:], ((0, n_root),), n_root)] if n_prefix > n_root else []
            for part in chunks(len(group.suffixes), self.batch_size):
                suffixes = [Segment(group.suffixes[j], ((0, n_prefix),), n_prefix) for j in part]
                packed = packed_segments(cache.get_seq_length(), context + suffixes, self.activation_dtype, self.device)
                logits = self._next_token_logits(packed.input_ids, attention_mask=packed.attention_mask,
                                                 position_ids=packed.position_ids, keep=packed.last[len(context):],
                                                 cache=cache)[0]
                out[[group.members[j] for j in part]] = self._probability(logits)
                self._count(packed.input_ids.shape[1])
                self._crop(cache, n_prefix)
                context = []
            self._crop(cache, n_root)
        return out

    # -- cache and counters -----------------------------------------------------------------
    def _extend(self, cache: Any, ids: Sequence[int], start: int) -> Any:
        """Run ``ids`` (positions ``start``...) causally on top of ``cache``, growing it; the
        next-token logits ``[1, vocab]`` after the last id (None for no ids)."""
        import torch

        if not ids:
            return None
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        positions = torch.arange(start, start + len(ids), device=self.device).unsqueeze(0)
        logits = self._next_token_logits(input_ids, attention_mask=None, position_ids=positions, keep=1, cache=cache)
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

    # -- the model ----------------------------------------------------------------------------
    def _next_token_logits(self, input_ids: Any, *, attention_mask: Any, position_ids: Any, keep: Any,
                           cache: Any = None) -> Any:
        """The one model call: logits ``[batch, len(keep), vocab]`` at sequence positions ``keep``
        (an int n = the last n positions, or a 1-D tensor of positions); ``cache`` grows in place."""
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask,
                                  "position_ids": position_ids, "use_cache": cache is not None}
        if cache is not None:
            kwargs[self._cache_kwarg] = cache
        if self._can_keep_logits:
            return self.model(**kwargs, logits_to_keep=keep).logits
        logits = self.model(**kwargs).logits
        return logits[:, -keep:] if isinstance(keep, int) else logits[:, keep]
