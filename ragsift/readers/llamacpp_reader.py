"""A reader that runs a GGUF model in-process with llama.cpp (``llama-cpp-python``), greedy.

No server to start: the model file is memory-mapped on first use (``warm_up``). The prompt is
rendered with the model's own chat template (the GGUF's ``tokenizer.chat_template``), tokenized,
and refused with :class:`PromptTooLongError` when it plus ``max_new_tokens`` does not fit the
context window (nothing is truncated). Decoding is greedy (temperature 0, no repetition
penalty) and stops at the model's end-of-generation tokens, the template's stop string and the
configured ``stop`` strings. Every prompt is evaluated from an empty KV cache, so an answer
does not depend on what was read before it: the same prompt gives the same answer.

llama.cpp's OpenMP threads spin while they wait by default, which made it about 4x slower on a
shared 2-core machine; ``OMP_WAIT_POLICY=PASSIVE`` is set before the library loads unless the
environment already sets it (:mod:`ragsift.openmp`, for torch too).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from ragsift.errors import ConfigError, MissingDependencyError, PromptTooLongError
from ragsift.models import OFFLINE_QWEN_1_5B, describe_model, resolve_model
from ragsift.openmp import LOADED_BEFORE, prefer_passive_wait
from ragsift.readers.base import Reader, ReaderAnswer, ReaderError, ReaderParams, cut_at_stop

__all__ = ["LlamaCppReader", "LlamaCppReaderParams", "load_llama"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_models: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}


@atexit.register
def _close_models() -> None:
    """Free the cached models before interpreter teardown (llama.cpp's finalizers fail once
    module globals are gone)."""
    with _lock:
        for llm, _ in _models.values():
            llm.close()
        _models.clear()


class LlamaCppReaderParams(ReaderParams):
    model: str = Field(OFFLINE_QWEN_1_5B, description="a GGUF file: path, package:PKG/FILE.gguf or split:NAME")
    n_ctx: int | None = Field(
        8192, ge=64, description="context window (prompt + answer, tokens); null: the model's training context"
    )
    n_threads: int | None = Field(None, ge=1, le=512, description="CPU threads; null: the CPUs this process may use")
    n_batch: int = Field(512, ge=1, le=65536, description="prompt tokens per forward pass")
    n_gpu_layers: int = Field(0, ge=-1, description="layers offloaded to a GPU build of llama.cpp; -1: all")
    seed: int = Field(0, ge=0, description="sampler seed (decoding is greedy; kept for reproducibility)")


def _threads(requested: int | None) -> int:
    if requested is not None:
        return requested
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _import_llama_cpp() -> Any:
    """``llama_cpp``, imported with ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy."""
    if "llama_cpp" in prefer_passive_wait() or "llama_cpp" in LOADED_BEFORE:
        log.warning("llama_cpp was imported before ragsift could set OMP_WAIT_POLICY=PASSIVE; "
                    "on a busy machine set it in the environment")
    try:
        import llama_cpp
    except ImportError:
        raise MissingDependencyError(
            "The llama-cpp reader needs llama-cpp-python (it compiles llama.cpp, a few minutes once): "
            "pip install 'ragsift[llama-cpp]' (or run scripts/setup.sh)."
        ) from None
    return llama_cpp


def load_llama(path: str, *, n_ctx: int | None, n_threads: int, n_batch: int, n_gpu_layers: int,
               seed: int) -> tuple[Any, threading.Lock]:
    """A ``llama_cpp.Llama`` for ``path`` and the lock that serialises its use, cached per process
    (readers with the same settings share one model)."""
    key = (path, n_ctx, n_threads, n_batch, n_gpu_layers, seed)
    with _lock:
        if key in _models:
            return _models[key]
        llama_cpp = _import_llama_cpp()
        llm = llama_cpp.Llama(
            model_path=path,
            n_ctx=n_ctx or 0,  # 0: the model's training context
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_batch=n_batch,
            n_gpu_layers=n_gpu_layers,
            seed=seed,
            logits_all=False,
            verbose=False,
        )
        train_ctx = int(llama_cpp.llama_model_n_ctx_train(llm.model))
        if n_ctx is not None and n_ctx > train_ctx:
            llm.close()
            raise ConfigError(
                f"LlamaCppReader: n_ctx {n_ctx} exceeds the {train_ctx} tokens the model in {path} "
                f"was trained on; lower n_ctx (or null for {train_ctx})."
            )
        _models[key] = (llm, threading.Lock())
        return _models[key]


class LlamaCppReader(Reader):
    """Greedy answers from a GGUF model run in-process by llama.cpp (see the module docstring)."""

    Params = LlamaCppReaderParams
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._llm: Any = None
        self._llm_lock = threading.Lock()
        self._formatter: Any = None
        self._path: str | None = None

    # -- model -----------------------------------------------------------------------------
    def warm_up(self) -> None:
        if self._llm is not None:
            return
        location = resolve_model(self.params.model)
        if location.kind != "gguf" or location.file is None:
            raise ConfigError(
                f"LlamaCppReader: model '{self.params.model}' is a {location.kind}, not a GGUF file; "
                "name a .gguf file, package:PKG/FILE.gguf or split:NAME (or use the transformers reader)."
            )
        self._path = str(location.file)
        llm, lock = load_llama(
            self._path, n_ctx=self.params.n_ctx, n_threads=_threads(self.params.n_threads),
            n_batch=self.params.n_batch, n_gpu_layers=self.params.n_gpu_layers, seed=self.params.seed,
        )
        self._formatter = self._chat_formatter(llm)
        self._llm, self._llm_lock = llm, lock

    def _chat_formatter(self, llm: Any) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigError(
                f"LlamaCppReader: model '{self.params.model}' has no chat template in its GGUF metadata "
                "(tokenizer.chat_template); the llama-cpp reader needs an instruct model with one."
            )
        def text(token: int) -> str:  # the special token's text, as the template writes it
            return llm.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""

        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos, bos = text(eos_id), text(bos_id)
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                   add_generation_prompt=True, stop_token_ids=[eos_id] if eos_id >= 0 else None)

    def context_window(self) -> int:
        """Tokens the prompt and the answer share (loads the model)."""
        self.warm_up()
        return int(self._llm.n_ctx())

    def tokenizer_spec(self) -> str | None:
        return self.params.model

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["n_threads"] = _threads(self.params.n_threads)
        out["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
        try:
            import importlib.metadata

            out["llama_cpp_python"] = importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            out["llama_cpp_python"] = None
        try:
            out["model"] = describe_model(self.params.model)
        except Exception as exc:  # a manifest must not fail on a model it cannot hash
            out["model"] = {"spec": self.params.model, "error": str(exc)}
        return out

    # -- prompt ----------------------------------------------------------------------------
    def render_prompt(self, question: str, context: str) -> tuple[list[int], list[str]]:
        """Token ids of the full prompt (the model's chat template applied) and the template's
        stop strings; raises :class:`PromptTooLongError` when the prompt and the answer budget
        do not fit the context window."""
        self.warm_up()
        rendered = self._formatter(messages=self.prompt.messages(question, context))
        ids = self._llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        window = int(self._llm.n_ctx())
        if len(ids) + self.params.max_new_tokens > window:
            raise PromptTooLongError(
                f"LlamaCppReader: the prompt has {len(ids)} tokens and the answer may take "
                f"{self.params.max_new_tokens} more, but the context window of model "
                f"'{self.params.model}' is {window} tokens ({len(context)} characters of context). "
                "Nothing is truncated: compress the context more, shorten the templates, lower "
                "max_new_tokens or raise n_ctx."
            )
        stops = rendered.stop if isinstance(rendered.stop, list) else [rendered.stop] if rendered.stop else []
        return list(ids), [s for s in stops if s]

    # -- generation ------------------------------------------------------------------------
    def _generate(self, ids: list[int], template_stops: list[str]) -> tuple[str, int]:
        with self._llm_lock:
            self._llm.reset()  # evaluate from an empty cache: answers never depend on earlier prompts
            try:
                out = self._llm.create_completion(
                    prompt=ids,
                    max_tokens=self.params.max_new_tokens,
                    temperature=0.0,
                    top_k=1,
                    top_p=1.0,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    seed=self.params.seed,
                    stop=[*template_stops, *self.params.stop] or None,
                )
            except ValueError as exc:  # llama.cpp's own limit check; ours runs first
                raise ReaderError(f"LlamaCppReader: model '{self.params.model}': {exc}") from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return cut_at_stop(choice.get("text") or "", self.params.stop), int(usage.get("completion_tokens", 0))

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self._check_lengths(questions, contexts)
        if not questions:
            return []
        self.warm_up()
        prompts = [self.render_prompt(q, c) for q, c in zip(questions, contexts, strict=True)]
        answers = []
        for ids, stops in prompts:
            t = time.perf_counter()
            text, n = self._generate(ids, stops)
            answers.append(ReaderAnswer(text, len(ids), n, time.perf_counter() - t))
        return answers
