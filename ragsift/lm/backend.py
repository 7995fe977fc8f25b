"""Which Yes/No engine a component asks: the torch one (:class:`~ragsift.lm.engine.YesNoEngine`,
transformers models) or the llama.cpp one (:class:`~ragsift.lm.llamacpp_engine.LlamaCppYesNoEngine`,
GGUF files run in-process), chosen by the ``backend`` param of EXIT's scorer and the causal judge.

With ``backend = "llama-cpp"`` the GGUF file is run as it is (its own quantised weights and
tokenizer), the context window is the component's ``max_length`` (capped at the model's training
context), and the torch-only settings (a LoRA adapter, 4-bit loading, another dtype, a GPU
device, a trained readout) are refused rather than ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ragsift.errors import ConfigError
from ragsift.model_plugins import CausalLMParams

__all__ = ["Backend", "YesNoBackendParams", "load_llama_cpp_model", "yes_no_engine"]

Backend = Literal["torch", "llama-cpp"]

#: prompt tokens per llama_decode call
LLAMA_N_BATCH = 512


class YesNoBackendParams(CausalLMParams):
    """Params of a plugin that asks a causal LM a Yes/No question through either engine."""

    #: "torch" (transformers; a GGUF file is dequantised) or "llama-cpp" (the GGUF file run by
    #: llama.cpp, in-process; prefix reuse on its KV cache)
    backend: Backend = "torch"
    #: llama-cpp only: CPU threads (null: the CPUs this process may use)
    n_threads: int | None = Field(None, ge=1, le=512)

    @model_validator(mode="after")
    def _llama_cpp_settings(self) -> Any:
        if self.backend != "llama-cpp":
            if self.n_threads is not None:
                raise ValueError("n_threads applies to backend = \"llama-cpp\" only (torch's threads: torch.set_num_threads)")
            return self
        refused = {
            "adapter": self.adapter is not None,
            "load_in_4bit": self.load_in_4bit,
            "dtype": self.dtype != "fp32",
            "device": self.device not in ("auto", "cpu"),
            "readout": getattr(self, "readout", None) is not None,
            "share_hidden_states": bool(getattr(self, "share_hidden_states", False)),
        }
        bad = [name for name, is_set in refused.items() if is_set]
        if bad:
            raise ValueError(
                f"backend = \"llama-cpp\" runs the GGUF file as it is, on the CPU, and reads the Yes/No logits only; "
                f"{', '.join(bad)} need(s) the torch backend (leave them unset, adapter = \"\")"
            )
        return self


def load_llama_cpp_model(spec: str, max_length: int, n_threads: int | None, owner: str) -> tuple[Any, Any]:
    """``(LlamaCppModel, LlamaCppTokenizer)`` for the GGUF file ``spec`` with a context window of
    ``max_length`` tokens (lowered to the model's training context when that is shorter)."""
    from ragsift.lm.llamacpp_model import LlamaCppModel, LlamaCppTokenizer, cpu_threads, gguf_path, load_llama

    path = gguf_path(spec, owner)
    llm, lock = load_llama(path, n_ctx=max_length, n_threads=cpu_threads(n_threads), n_batch=LLAMA_N_BATCH,
                           n_gpu_layers=0, seed=0, owner=owner, cap_n_ctx=True)
    return LlamaCppModel(llm, lock, path), LlamaCppTokenizer(llm, spec, owner)


def yes_no_engine(backend: str, model: Any, tokenizer: Any, positive: str, negative: str, *, batch_size: int,
                  owner: str) -> Any:
    """The engine of ``backend`` around a loaded model (``load_model``'s pair)."""
    if backend == "llama-cpp":
        from ragsift.lm.llamacpp_engine import LlamaCppYesNoEngine
        from ragsift.lm.llamacpp_model import LlamaCppModel

        if not isinstance(model, LlamaCppModel):
            raise ConfigError(f"{owner}: backend = \"llama-cpp\" needs a model loaded by llama.cpp "
                              f"(ragsift.lm.backend.load_llama_cpp_model); got {type(model).__name__}.")
        return LlamaCppYesNoEngine(model.llm, tokenizer, positive, negative, lock=model.lock, owner=owner)
    from ragsift.lm.engine import YesNoEngine

    return YesNoEngine(model, tokenizer, positive, negative, batch_size=batch_size, owner=owner)
