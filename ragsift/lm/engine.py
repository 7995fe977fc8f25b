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
        #: what a call computes per prompt from the kept rows (logits, or hidden states when
        #: ``_hidden``): set by :meth:`_run`
        self._hidden = False
        self._head: Any = self._two_way
        self._width: tuple[int, ...] = ()

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
            return self._run(prompts, layout, hint, False, self._two_way, ())
        vector = torch.as_tensor(readout[0], dtype=torch.float32).to(self.device).reshape(-1)
        hidden_size = self.model.get_output_embeddings().weight.shape[1]
        if vector.numel() != hidden_size:
            raise ConfigError(f"{self.owner}: the readout vector has {vector.numel()} values; the model's hidden size is {hidden_size}.")
        bias = float(readout[1])
        return self._run(prompts, layout, hint, True, lambda h: torch.sigmoid(h.float() @ vector + bias).cpu(), ())

    def hidden_states(self, prompts: Sequence[EncodedPrompt], layout: str = "auto", hint: str = "") -> np.ndarray:
        """The final hidden state at each prompt's last position (``[len(prompts), hidden]``, fp32
        values in float64): what the output layer turns into the next-token logits."""
        hidden_size = self.model.get_output_embeddings().weight.shape[1]
        return self._run(prompts, layout, hint, True, lambda h: h.float().cpu(), (hidden_size,))

    def _run(self, prompts: Sequence[EncodedPrompt], layout: str, hint: str, hidden: bool, head: Any,
             width: tuple[int, ...]) -> np.ndarray:
        import torch

        self.stats = {"forward_passes": 0, "tokens": 0}
        if not prompts:
            return np.zeros((0, *width))
        chosen = self.choose_layout(prompts, layout, hint)
        self.stats["layout"] = chosen
        run = {"padded": self._padded, "trunk": self._trunk, "packed": self._packed}[chosen]
        self._hidden, self._head, self._width = hidden, head, width
        try:
            with torch.inference_mode():
                return run(prompts).double().cpu().numpy()
        finally:
            self._hidden, self._head, self._width = False, self._two_way, ()

    def _two_way(self, logits: Any) -> Any:
        return two_way_probability(logits[:, self.positive_id], logits[:, self.negative_id]).cpu()

    def _probability(self, rows: Any) -> Any:
        """The call's result for kept rows (logits, or hidden states when the call reads them)."""
        return self._head(rows)

    def _output(self, n: int) -> Any:
        import torch

        return torch.empty(n, *self._width, dtype=torch.float32)

    def _padded(self, prompts: Sequence[EncodedPrompt]) -> Any:
        out = self._output(len(prompts))
        for rows in chunks(len(prompts), self.batch_size):
            ids, mask, positions = padded_batch([prompts[i].ids for i in rows], self.pad_id, self.device)
            logits = self._next_token_logits(ids, attention_mask=mask, position_ids=positions, keep=1)[:, -1]
            out[rows.start : rows.stop] = self._probability(logits)
            self._count(ids.numel())
        return out

    def _trunk(self, prompts: Sequence[EncodedPrompt]) -> Any:
        ids = [p.ids for p in prompts]
        out = self._output(len(prompts))
        trunk, rest = trunk_plan(ids)
        cache = self._new_cache()
        out[trunk] = self._probability(self._extend(cache, ids[trunk], 0))[0]
        for i, start in rest:
            self._crop(cache, start)
            out[i] = self._probability(self._extend(cache, ids[i][start:], start))[0]
        return out

    def _packed(self, prompts: Sequence[EncodedPrompt]) -> Any:
        out = self._output(len(prompts))
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
        (an int n = the last n positions, or a 1-D tensor of positions); ``cache`` grows in place.
        When the call reads hidden states, the output layer's input ``[batch, len(keep), hidden]``
        of the same forward pass instead."""
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask,
                                  "position_ids": position_ids, "use_cache": cache is not None}
        if cache is not None:
            kwargs[self._cache_kwarg] = cache
        captured: list[Any] = []
        hook = None
        if self._hidden:
            hook = self.model.get_output_embeddings().register_forward_hook(lambda _m, args, _out: captured.append(args[0]))
        try:
            output = self.model(**kwargs, logits_to_keep=keep) if self._can_keep_logits else self.model(**kwargs)
            rows = captured[-1] if self._hidden else output.logits
            if self._can_keep_logits:
                return rows
            return rows[:, -keep:] if isinstance(keep, int) else rows[:, keep]
        finally:
            if hook is not None:
                hook.remove()
