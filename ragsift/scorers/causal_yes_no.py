"""EXIT's sentence classifier: a causal LM asked whether a sentence helps answer the query.

The model reads the query, the sentence's OWN document and the sentence; the score is
P(Yes) / (P(Yes) + P(No)) from the Yes/No engine (:mod:`ragsift.lm`). ``mode``: ``prefix-shared``
(default; the engine's ``packed`` layout) or ``reference`` (``padded``, the EXIT authors'
batching); same scores, tested. Prompt, tokenization, overflow and modes: docs/exit.md.

``backend = "llama-cpp"`` runs a GGUF file in-process with llama.cpp instead of transformers
(:mod:`ragsift.lm.backend`): the same prompts, encoded by the model's own tokenizer, the same
score from the full next-token row; ``prefix-shared`` then reuses the KV cache along the prompt
tree (a document's head and context once, each sentence after them) and ``reference`` evaluates
every prompt from an empty cache (docs/exit.md, "The llama.cpp engine").

Readout: with ``readout = "path/readout.safetensors"`` (a vector ``weight`` and a scalar ``bias``,
written by the ``yes-no-readout`` trainer) the score is ``sigmoid(weight . h + bias)`` of the
model's final hidden state ``h`` at the prompt's last position, from the same forward pass,
instead of the Yes/No logit difference (which is the readout ``w_yes - w_no``, bias 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ragsift.errors import ConfigError
from ragsift.lm import (
    DEFAULT_MAX_LENGTH,
    EXIT_TEMPLATE,
    EncodedPrompt,
    YesNoEngine,
    YesNoPromptEncoder,
    YesNoTemplate,
    resolve_max_length,
)
from ragsift.lm.backend import YesNoBackendParams, load_llama_cpp_model, yes_no_engine
from ragsift.lm.llamacpp_engine import LlamaCppYesNoEngine
from ragsift.lm.readout import load_readout
from ragsift.model_plugins import CausalLMPlugin
from ragsift.plugin import OptionalName
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["CausalYesNoScorer", "CausalYesNoParams", "EXIT_MODEL", "EXIT_ADAPTER"]

EXIT_MODEL = "google/gemma-2b-it"
EXIT_ADAPTER = "doubleyyh/exit-gemma-2b"

def _check_adapter_path(spec: str) -> None:
    """A missing adapter whose first part is a local folder (``models/...``) is a missing path, not
    a Hub id (which it would otherwise be taken for, and only fail when loaded)."""
    from ragsift.models import resolve_local_path

    if spec.startswith(("hub:", "package:", "split:")) or resolve_local_path(spec).exists():
        return
    first = Path(spec).parts[0] if Path(spec).parts else ""
    if first and resolve_local_path(first).is_dir():
        raise ConfigError(f"adapter '{spec}': no such folder (its first part '{first}' is a local folder, "
                          "so this names a local path, not a Hub id).")


class CausalYesNoParams(YesNoBackendParams):
    #: the causal LM: Hub id, folder, GGUF file or package:PKG/PATH
    model: str = Field(EXIT_MODEL, min_length=1)
    adapter: OptionalName = EXIT_ADAPTER
    #: a trained readout (safetensors: ``weight`` [hidden], ``bias`` [1]) scoring the last hidden state
    readout: OptionalName = None
    #: the prompt, with {query}, {context} and {sentence} once each, in that order
    template: str = EXIT_TEMPLATE
    mode: Literal["prefix-shared", "reference"] = "prefix-shared"
    #: sentences per forward pass (reference: complete prompts; prefix-shared: packed suffixes)
    batch_size: int = Field(8, ge=1, le=4096)
    #: what to do when a prompt is longer than max_length: raise, or cut the document context
    overflow: Literal["error", "head-tail"] = "error"
    #: cap on prompt tokens (default 4096); the model's and tokenizer's limits also apply
    max_length: int | None = Field(None, ge=8, le=1_000_000)
    #: keep the final hidden states of each call for other scorers of this process on the same
    #: model and prompts (and reuse theirs): zero-shot and a readout for one forward pass
    share_hidden_states: bool = False

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        YesNoTemplate.parse(value)
        return value


class CausalYesNoScorer(CausalLMPlugin, Scorer):
    """Scores each sentence by a causal LM's normalised P("Yes") (EXIT's classifier)."""

    Params = CausalYesNoParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._encoder: YesNoPromptEncoder | None = None
        self._engine: YesNoEngine | LlamaCppYesNoEngine | None = None
        self._readout: tuple[Any, float] | None = None
        #: counters of the last ``score`` call: prompts, forward passes, tokens run through the model
        self.stats: dict[str, Any] = {}

    def load_model(self) -> tuple[Any, Any]:
        p = self.params
        if p.backend == "llama-cpp":
            return load_llama_cpp_model(p.model, p.max_length or DEFAULT_MAX_LENGTH, p.n_threads, type(self).__name__)
        return super().load_model()

    def attach(self, model: Any, tokenizer: Any) -> None:
        p, owner = self.params, type(self).__name__
        if p.backend == "llama-cpp":  # the window was sized to max_length (or the model's shorter context)
            max_length = min(p.max_length or DEFAULT_MAX_LENGTH, tokenizer.model_max_length)
        else:
            max_length = resolve_max_length(p.max_length, model.config, tokenizer)
        self._engine = yes_no_engine(p.backend, model, tokenizer, "Yes", "No", batch_size=p.batch_size, owner=owner)
        self._encoder = YesNoPromptEncoder(tokenizer, p.template, max_length, p.overflow, owner=owner)
        self._readout = None if p.readout is None else load_readout(p.readout, owner)
        super().attach(model, tokenizer)

    def check_model_files(self) -> None:
        """``ragsift config validate`` (no weights load): the model and the adapter as every model
        is checked, an adapter written as a local path that does not exist, and the readout file
        (exists, a safetensors file with ``weight`` and ``bias``)."""
        from ragsift.models import check_model

        p = self.params
        check_model(p.model)
        if p.adapter:
            _check_adapter_path(p.adapter)
            check_model(p.adapter)
        if p.readout is not None:
            load_readout(p.readout, type(self).__name__)

    @property
    def encoder(self) -> YesNoPromptEncoder:
        """The prompt encoder (loads the model on first use)."""
        self.warm_up()
        assert self._encoder is not None
        return self._encoder

    @property
    def engine(self) -> YesNoEngine | LlamaCppYesNoEngine:
        """The Yes/No engine around the model (loads it on first use)."""
        self.warm_up()
        assert self._engine is not None
        return self._engine

    def prompts(self, example: Example, sentences: Sequence[Sentence]) -> list[EncodedPrompt]:
        """The encoded prompt of every sentence (what the model reads)."""
        return self.encoder.encode_example(example, sentences)

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # normalised P(Yes)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        prompts = self.prompts(example, sentences)
        layout = "padded" if self.params.mode == "reference" else "packed"
        hint = 'set mode = "reference" for this model'
        if self.params.share_hidden_states:
            return self._score_shared(prompts, layout, hint)
        scores = self.engine.probabilities(prompts, layout, hint=hint, readout=self._readout)
        self.stats = {"prompts": len(prompts), "truncated": sum(p.truncated for p in prompts), **self.engine.stats}
        return scores

    def _score_shared(self, prompts: list[EncodedPrompt], layout: str, hint: str) -> np.ndarray:
        """Scores from the final hidden states of :data:`SHARED_HIDDEN_STATES` (computed here when
        no scorer of this process has run these prompts on this model yet)."""
        import torch

        from ragsift.lm.shared_hidden import SHARED_HIDDEN_STATES

        engine = self.engine
        hidden = SHARED_HIDDEN_STATES.get(engine.model, layout, prompts)
        if hidden is None:
            hidden = engine.hidden_states(prompts, layout, hint=hint)
            SHARED_HIDDEN_STATES.put(engine.model, layout, prompts, hidden)
            run = dict(engine.stats)
        else:
            run = {"forward_passes": 0, "tokens": 0, "layout": layout, "shared_hidden_states": True}
        vector, bias = self._readout if self._readout is not None else self._two_way_readout()
        rows = torch.from_numpy(hidden).float()
        scores = torch.sigmoid(rows @ torch.as_tensor(vector, dtype=torch.float32).reshape(-1).cpu() + float(bias))
        self.stats = {"prompts": len(prompts), "truncated": sum(p.truncated for p in prompts), **run}
        return scores.double().numpy()

    def _two_way_readout(self) -> tuple[Any, float]:
        """The readout that is the zero-shot Yes/No score: ``w_yes - w_no`` of the output layer
        (and the difference of its biases, if it has any)."""
        head = self.engine.model.get_output_embeddings()
        yes, no = self.engine.positive_id, self.engine.negative_id
        vector = (head.weight[yes] - head.weight[no]).detach().float().cpu()
        bias = 0.0 if getattr(head, "bias", None) is None else float(head.bias[yes] - head.bias[no])
        return vector, bias
