"""ragsift inside RAG frameworks: one adapter module per framework, each an optional extra.

- :mod:`ragsift.integrations.langchain` — ``RagsiftDocumentCompressor``, a LangChain
  ``BaseDocumentCompressor`` (``pip install 'ragsift[langchain]'``).
- :mod:`ragsift.integrations.llamaindex` — ``RagsiftNodePostprocessor``, a LlamaIndex
  ``BaseNodePostprocessor`` (``pip install 'ragsift[llama-index]'``).
- :mod:`ragsift.integrations.haystack` — ``RagsiftCompressor``, a Haystack component
  (``pip install 'ragsift[haystack]'``).

Every adapter compresses the documents of one query with a ragsift compressor and returns one
document per input document that keeps at least one sentence, in the input order, carrying its
own metadata plus a ``"ragsift"`` entry (see :mod:`ragsift.integrations.sifting`). Importing this
package imports no framework.
"""
