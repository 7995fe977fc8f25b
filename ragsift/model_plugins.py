"""Mixins for plugins that load a model: their params (which model, where it runs, its
precision; for causal LMs a LoRA adapter and 4-bit weights) and the load-on-first-use plugin
around a (model, tokenizer) pair. The plugin contract itself is :mod:`ragsift.plugin`."""

from __future__ import annotations

import re
from abc import abstractmethod
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator

from ragsift.plugin import OptionalName, Params, Plugin

__all__ = ["ModelParams", "CausalLMParams", "ModelPlugin", "CausalLMPlugin"]


class ModelParams(Params):
    """Params of a plugin that loads a model: which (a Hub id, a folder, a GGUF file or
    ``package:PKG/PATH``; see :mod:`ragsift.models`), where it runs, the precision of its weights."""

    model: str = Field(min_length=1)
    device: str = "auto"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", value):
            raise ValueError("must be 'auto', 'cpu', 'cuda' or 'cuda:N'")
        return value


class CausalLMParams(ModelParams):
    """Params of a plugin that loads a causal LM (:func:`ragsift.models.load_causal_lm`)."""

    #: a PEFT (LoRA) adapter on top of the model; "" = none
    adapter: OptionalName = None
    #: bitsandbytes NF4 weights with ``dtype`` compute (CUDA only)
    load_in_4bit: bool = False


class ModelPlugin(Plugin):
    """A plugin around a (model, tokenizer) pair it loads on first use (``warm_up``) or is handed
    (:meth:`from_model`: tests, notebooks, trainers). Subclasses write :meth:`load_model`; those
    that build something from the model (an engine, a prompt encoder) extend :meth:`attach`.
    Mixed in before the stage base: ``class MyScorer(ModelPlugin, Scorer)``."""

    needs_model: ClassVar[bool] = True
    extras: ClassVar[tuple[str, ...]] = ("models",)
    _model: Any = None
    _tokenizer: Any = None

    def required_extras(self) -> tuple[str, ...]:
        """The model stack (torch, transformers: the 'models' extra), or llama.cpp alone for a
        Yes/No plugin run with ``backend = "llama-cpp"`` (:mod:`ragsift.lm.backend`)."""
        return ("llama-cpp",) if getattr(self.params, "backend", None) == "llama-cpp" else type(self).extras

    @classmethod
    def from_model(cls, loaded_model: Any, tokenizer: Any, /, **params: Any) -> Self:
        """A plugin around a model already in memory; the ``model`` param then only names it."""
        plugin = cls(**params)
        plugin.attach(loaded_model, tokenizer)
        return plugin

    def warm_up(self) -> None:
        if self._model is None:
            self.attach(*self.load_model())

    @abstractmethod
    def load_model(self) -> tuple[Any, Any]:
        """(model, tokenizer) named by the params."""

    def attach(self, model: Any, tokenizer: Any) -> None:
        """Use ``model`` and ``tokenizer`` from now on (set last: a failed attach is retried)."""
        self._model, self._tokenizer = model, tokenizer


class CausalLMPlugin(ModelPlugin):
    """A :class:`ModelPlugin` whose params are :class:`CausalLMParams`: it loads that causal LM
    (device, precision, 4-bit weights and adapter as the params say)."""

    def load_model(self) -> tuple[Any, Any]:
        from ragsift.models import load_causal_lm

        p = self.params
        return load_causal_lm(p.model, device=p.device, dtype=p.dtype, load_in_4bit=p.load_in_4bit, adapter=p.adapter)
