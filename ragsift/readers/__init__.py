"""ragsift's built-in readers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_readers(register: Register) -> None:
    from ragsift.readers.llamacpp_reader import LlamaCppReader
    from ragsift.readers.openai_reader import OpenAIReader
    from ragsift.readers.transformers_reader import TransformersReader

    register("transformers", TransformersReader)
    register("openai", OpenAIReader)
    register("llama-cpp", LlamaCppReader)
