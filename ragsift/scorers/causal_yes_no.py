"""EXIT's sentence classifier: a causal LM asked whether a sentence helps answer the query.

For every sentence the model reads the query, the sentence's OWN document (``"{title}\\n{text}"``)
and the sentence, then the next-token logits of ``"Yes"`` and ``"No"`` give the score
``P(Yes) / (P(Yes) + P(No)) = sigmoid(l_yes - l_no)``, computed in fp32 (the softmax over the full
vocabulary restricted to those two tokens). Prompt building, BOS handling and the overflow policy
live in :mod:`ragsift.scorers.yes_no_prompt`; batching in :mod:`ragsift.scorers.yes_no_batches`.

Tokenization: the prompt is encoded as three pieces (template head with the query, the
document context, the suffix with the sentence), each without special tokens, concatenated, with
BOS in front only when the tokenizer adds BOS to a whole string (Gemma, Llama; not SmolLM2). This
is what the EXIT reference code does. It can differ from encoding the whole prompt string at once
by a few tokens at the two piece boundaries (a BPE merge across ``"...context:\n" | "Title..."``
cannot happen); in exchange the context can be cut exactly and the prefix ids are identical for
every sentence of a document, which prefix sharing needs.

Two modes give the same scores (max |diff| <= 1e-4 in fp32, tested):

- ``prefix-shared`` (default): the start all prompts share (template head + query) runs once
  into a KV cache; then each document's context and up to ``batch_size`` of its sentence suffixes
  run in one packed forward pass with a block attention mask (no padding), further suffixes of
  the document against the cached context. Needs an attention implementation that accepts a 4D
  mask (``sdpa`` or ``eager``, the defaults) and no sliding window shorter than the prompts.
- ``reference``: the EXIT authors' batching (``batch_size`` complete prompts per forward pass,
  left padding, pad = eos): the baseline the benchmark compares against.

The only model call is :meth:`CausalYesNoScorer._next_token_logits`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.scorers.yes_no_batches import (
    Segment,
    chunks,
    common_prefix_length,
    left_padded_batch,
    packed_segments,
    shared_prefix_groups,
)
from ragsift.scorers.yes_no_prompt import (
    EXIT_TEMPLATE,
    EncodedPrompt,
    YesNoPromptEncoder,
    YesNoTemplate,
    resolve_max_length,
)
from ragsift.types import Example, Sentence

__all__ = ["CausalYesNoScorer", "CausalYesNoParams", "yes_probability", "EXIT_MODEL", "EXIT_ADAPTER"]

EXIT_MODEL = "google/gemma-2b-it"
EXIT_ADAPTER = "doubleyyh/exit-gemma-2b"

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


class CausalYesNoParams(Params):
    #: the causal LM: Hub id, folder, GGUF file or package:PKG/PATH
    model: str = Field(EXIT_MODEL, min_length=1)
    #: a PEFT (LoRA) adapter on top of ``model``; "" or omitted in a config that sets it to "" = none
    adapter: str | None = EXIT_ADAPTER
    #: the prompt, with {query}, {context} and {sentence} once each, in that order
    template: str = EXIT_TEMPLATE
    mode: Literal["prefix-shared", "reference"] = "prefix-shared"
    #: sentences per forward pass (reference: complete prompts; prefix-shared: packed suffixes)
    batch_size: int = Field(8, ge=1, le=4096)
    device: str = "auto"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    #: bitsandbytes NF4 weights with ``dtype`` compute (CUDA only), as the EXIT authors load it
    load_in_4bit: bool = False
    #: what to do when a prompt is longer than max_length: raise, or cut the document context
    overflow: Literal["error", "head-tail"] = "error"
    #: cap on prompt tokens (default 4096); the model's and tokenizer's limits also apply
    max_length: int | None = Field(None, ge=8, le=1_000_000)

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        YesNoTemplate.parse(value)
        return value

    @field_validator("adapter")
    @classmethod
    def _adapter(cls, value: str | None) -> str | None:
        return value if value and value.strip() else None

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if not _DEVICE.match(value):
            raise ValueError("must be 'auto', 'cpu', 'cuda' or 'cuda:N'")
        return value


def yes_probability(logits: Any, yes_id: int, no_id: int) -> Any:
    """``P(Yes) / (P(Yes) + P(No))`` of next-token logits ``[N, vocab]``: ``sigmoid(l_yes - l_no)`` in fp32."""
    import torch

    logits = logits.float()
    return torch.sigmoid(logits[:, yes_id] - logits[:, no_id])


class CausalYesNoScorer(Scorer):
    """Scores each sentence by a causal LM's normalised P("Yes") (EXIT's classifier)."""

    Params = CausalYesNoParams
    #: scoring loads a language model (the conformance kit checks only what needs none)
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._model: Any = None
        self._encoder: YesNoPromptEncoder | None = None
        #: counters of the last ``score`` call: prompts, forward passes, tokens run through the model
        self.stats: dict[str, int] = {}

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, **params: Any) -> CausalYesNoScorer:
        """A scorer around a model already in memory (tests, notebooks); ``model`` names nothing then."""
        scorer = cls(**params)
        scorer._attach(model, tokenizer)
        return scorer

    def warm_up(self) -> None:
        if self._model is not None:
            return
        from ragsift.models import load_causal_lm

        p = self.params
        model, tokenizer = load_causal_lm(p.model, device=p.device, dtype=p.dtype, load_in_4bit=p.load_in_4bit, adapter=p.adapter)
        self._attach(model, tokenizer)

    def _attach(self, model: Any, tokenizer: Any) -> None:
        p = self.params
        max_length = resolve_max_length(p.max_length, model.config, tokenizer)
        self._encoder = YesNoPromptEncoder(tokenizer, p.template, max_length, p.overflow, owner=type(self).__name__)
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
        self._pad_id = int(pad if pad is not None else 0)
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        forward_params = inspect.signature(base.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"
        self._can_keep_logits = "logits_to_keep" in forward_params
        embeddings = model.get_input_embeddings().weight
        self._device, self._activation_dtype = embeddings.device, embeddings.dtype
        self._model = model

    @property
    def encoder(self) -> YesNoPromptEncoder:
        """The prompt encoder (loads the model on first use)."""
        self.warm_up()
        assert self._encoder is not None
        return self._encoder

    def prompts(self, example: Example, sentences: Sequence[Sentence]) -> list[EncodedPrompt]:
        """The encoded prompt of every sentence (what the model reads)."""
        return self.encoder.encode_example(example, sentences)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        import torch

        prompts = self.prompts(example, sentences)
        self.stats = {"prompts": len(prompts), "forward_passes": 0, "tokens": 0,
                      "truncated": sum(p.truncated for p in prompts)}
        with torch.inference_mode():
            if self.params.mode == "reference":
                scores = self._score_reference(prompts)
            else:
                self._check_packing(prompts)
                scores = self._score_prefix_shared(prompts)
        return scores.double().cpu().numpy()

    # -- the two modes -------------------------------------------------------------------------

    def _score_reference(self, prompts: Sequence[EncodedPrompt]) -> Any:
        import torch

        enc = self.encoder
        out = torch.empty(len(prompts), dtype=torch.float32)
        for rows in chunks(len(prompts), self.params.batch_size):
            ids, mask, positions = left_padded_batch([prompts[i].ids for i in rows], self._pad_id, self._device)
            logits = self._next_token_logits(ids, attention_mask=mask, position_ids=positions, keep=1)[:, -1]
            out[rows.start : rows.stop] = yes_probability(logits, enc.yes_id, enc.no_id).cpu()
            self._count(ids.numel())
        return out

    def _score_prefix_shared(self, prompts: Sequence[EncodedPrompt]) -> Any:
        import torch

        enc, dtype, device = self.encoder, self._activation_dtype, self._device
        out = torch.empty(len(prompts), dtype=torch.float32)
        groups = shared_prefix_groups(prompts)
        # the start every prompt shares (BOS + template head + query): once per call, into the cache
        n_root = common_prefix_length([g.prefix for g in groups])
        cache = self._new_cache()
        self._extend(cache, groups[0].prefix[:n_root], 0)
        for group in groups:
            # one document: its context (the rest of its prefix) runs in the first pass, packed in
            # front of up to batch_size of its sentence suffixes; later passes find it in the cache
            n_prefix = len(group.prefix)
            context = [Segment(group.prefix[n_root:], ((0, n_root),), n_root)] if n_prefix > n_root else []
            for part in chunks(len(group.suffixes), self.params.batch_size):
                suffixes = [Segment(group.suffixes[j], ((0, n_prefix),), n_prefix) for j in part]
                packed = packed_segments(cache.get_seq_length(), context + suffixes, dtype, device)
                keep = packed.last[len(context):]
                logits = self._next_token_logits(packed.input_ids, attention_mask=packed.attention_mask,
                                                 position_ids=packed.position_ids, keep=keep, cache=cache)[0]
                out[[group.members[j] for j in part]] = yes_probability(logits, enc.yes_id, enc.no_id).cpu()
                self._count(packed.input_ids.shape[1])
                self._crop(cache, n_prefix)
                context = []
            self._crop(cache, n_root)
        return out

    def _extend(self, cache: Any, ids: Sequence[int], start: int) -> None:
        """Run ``ids`` (positions ``start``...) causally on top of ``cache``, growing it."""
        import torch

        if not ids:
            return
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self._device)
        positions = torch.arange(start, start + len(ids), device=self._device).unsqueeze(0)
        self._next_token_logits(input_ids, attention_mask=None, position_ids=positions, keep=1, cache=cache)
        self._count(len(ids))

    @staticmethod
    def _crop(cache: Any, length: int) -> None:
        """Drop cached positions from ``length`` on (negative crop = tokens to drop, old and new API)."""
        extra = cache.get_seq_length() - length
        if extra > 0:
            cache.crop(-extra)

    def _count(self, tokens: int) -> None:
        self.stats["forward_passes"] += 1
        self.stats["tokens"] += int(tokens)

    # -- the model ------------------------------------------------------------------------------

    def _next_token_logits(self, input_ids: Any, *, attention_mask: Any, position_ids: Any, keep: Any, cache: Any = None) -> Any:
        """The one model call: logits ``[batch, len(keep), vocab]`` at sequence positions ``keep``
        (an int n = the last n positions, or a 1-D tensor of positions); ``cache`` grows in place."""
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids,
                                  "use_cache": cache is not None}
        if cache is not None:
            kwargs[self._cache_kwarg] = cache
        if self._can_keep_logits:
            return self._model(**kwargs, logits_to_keep=keep).logits
        logits = self._model(**kwargs).logits
        return logits[:, -keep:] if isinstance(keep, int) else logits[:, keep]

    def _new_cache(self) -> Any:
        from transformers import DynamicCache

        try:
            return DynamicCache(config=self._model.config)
        except TypeError:  # transformers < 4.56 takes no config
            return DynamicCache()

    def _check_packing(self, prompts: Sequence[EncodedPrompt]) -> None:
        """Prefix-shared scoring passes a custom 4-D mask: refuse setups that would ignore it."""
        config = self._model.config
        owner = type(self).__name__
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        if implementation.startswith("flash"):
            raise ConfigError(
                f"{owner}: mode 'prefix-shared' needs an attention implementation that takes a 4-D mask "
                f"(sdpa or eager); the model uses {implementation!r}. Load it with sdpa, or set mode = \"reference\"."
            )
        window = int(getattr(config, "sliding_window", None) or 0)
        layer_types = getattr(config, "layer_types", None) or []
        sliding = window > 0 and (not layer_types or any("sliding" in t for t in layer_types))
        longest = max(len(p) for p in prompts)
        if sliding and longest > window:
            raise ConfigError(
                f"{owner}: mode 'prefix-shared' cannot apply the model's sliding attention window ({window} tokens) "
                f"to a {longest}-token prompt; set mode = \"reference\" for this model."
            )
