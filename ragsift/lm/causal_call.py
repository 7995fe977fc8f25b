"""The one forward call of a causal LM that both engines make (:class:`~ragsift.lm.engine.YesNoEngine`,
:class:`~ragsift.lm.token_logprobs.TokenLogProbEngine`).

It probes the model's forward signature once (the cache's keyword, whether it takes
``logits_to_keep``), runs the output layer only at the positions asked for when the model can,
and slices the logits itself when it cannot; optionally it returns the output layer's input (the
final hidden states) of the same pass instead of the logits.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["CausalLMCall"]


class CausalLMCall:
    """``call(input_ids, attention_mask=..., position_ids=..., keep=...)`` of a causal LM in memory."""

    def __init__(self, model: Any) -> None:
        self.model = model
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        forward_params = inspect.signature(base.forward).parameters
        self.cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"
        self.can_keep_logits = "logits_to_keep" in forward_params

    def __call__(self, input_ids: Any, *, attention_mask: Any, position_ids: Any, keep: Any, cache: Any = None,
                 hidden: bool = False) -> Any:
        """Logits ``[batch, len(keep), vocab]`` at sequence positions ``keep`` (an int n = the last
        n positions, or a 1-D tensor of positions); ``cache`` (a KV cache) grows in place. With
        ``hidden``, the output layer's input ``[batch, len(keep), hidden]`` of the same pass."""
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask,
                                  "position_ids": position_ids, "use_cache": cache is not None}
        if cache is not None:
            kwargs[self.cache_kwarg] = cache
        captured: list[Any] = []
        hook = None
        if hidden:
            hook = self.model.get_output_embeddings().register_forward_hook(lambda _m, args, _out: captured.append(args[0]))
        try:
            output = self.model(**kwargs, logits_to_keep=keep) if self.can_keep_logits else self.model(**kwargs)
            rows = captured[-1] if hidden else output.logits
            if self.can_keep_logits:
                return rows
            return rows[:, -keep:] if isinstance(keep, int) else rows[:, keep]
        finally:
            if hook is not None:
                hook.remove()
