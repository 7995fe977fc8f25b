"""Dual-encoder scorer: query and sentences embedded separately, score = their similarity.

ECoRAG's compressor (a Contriever-initialised dual encoder, mean pooling, dot product) and the
RECOMP-style ``embedding`` baseline (cosine similarity) are both this scorer with different
settings.

Documented assumptions (ECoRAG's trained encoder is not public):

- ``pooling = "auto"``: a sentence-transformers folder (one with ``modules.json``) is encoded
  with its own pooling and normalisation modules; a plain transformers folder gets mean pooling
  over non-padding tokens, as Contriever does; a Hub id is handed to sentence-transformers,
  which applies the same rule (its own modules if the repository has them, else mean pooling).
- ``pooling = "mean"`` / ``"cls"``: the model is loaded with ``transformers.AutoModel`` and
  pooled here, whatever the folder holds (a sentence-transformers folder's extra modules, such
  as normalisation, are then ignored).
- Sentences are encoded as their text alone (no title), with ``sentence_prefix`` before each;
  the query as ``query_prefix + question``. Both prefixes are empty by default. With
  ``sentence_title = true`` a sentence is encoded as ``"{title} {sentence}"`` (RECOMP's
  extractive compressor as BERGEN feeds it: the document's title before each sentence).
- ``dtype`` applies to the transformers backend (``mean`` / ``cls``); a sentence-transformers
  model loads in its own default precision.
- Query and sentences share one encoder unless ``query_model`` names another (Contriever and
  ECoRAG share weights).
- ``head``: a trained linear head (a sentence-transformers ``Dense`` folder written by the
  ``dual-encoder`` trainer, :mod:`ragsift.scorers.embedding_head`) applied to the query and the
  sentence embeddings after the encoder (and before any cosine normalisation).
- ``adapter``: a LoRA adapter on the encoder itself (a peft folder written by the ``dual-encoder``
  trainer with ``encoder = "lora"``, :mod:`ragsift.scorers.encoder_adapter`), merged into a
  private copy of the encoder (and of the query encoder when ``query_model`` names another).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.model_plugins import ModelParams
from ragsift.models import OFFLINE_MINILM
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["DualEncoderScorer", "DualEncoderParams", "mean_pool", "cls_pool", "resolve_pooling"]

#: tokens per input when neither ``max_length`` nor the model says otherwise
DEFAULT_MAX_LENGTH = 512


class DualEncoderParams(ModelParams):
    #: the sentence encoder (and query encoder, unless ``query_model`` is set): Hub id, folder, package path
    model: str = OFFLINE_MINILM
    #: a separate query encoder (asymmetric dual encoder); ``None`` shares ``model``
    query_model: str | None = None
    pooling: Literal["auto", "mean", "cls"] = "auto"
    similarity: Literal["dot", "cosine"] = "dot"
    batch_size: int = Field(default=64, ge=1)
    #: tokens per input; ``None`` uses the model's own limit (capped at 512 for plain transformers)
    max_length: int | None = Field(default=None, ge=1)
    query_prefix: str = ""
    sentence_prefix: str = ""
    #: a trained head applied to every embedding (folder with config.json + model.safetensors); None: none
    head: str | None = None
    #: a LoRA adapter fine-tuning the encoder (folder with adapter_config.json + adapter_model.safetensors)
    adapter: str | None = None
    #: encode each sentence after its document's title: "{title} {sentence}"
    sentence_title: bool = False


def mean_pool(token_states: Any, attention_mask: Any) -> Any:
    """Mean of the token states over non-padding positions (Contriever's pooling)."""
    mask = attention_mask.unsqueeze(-1).to(token_states.dtype)
    summed = (token_states * mask).sum(dim=1)
    return summed / mask.sum(dim=1).clamp(min=1e-9)


def cls_pool(token_states: Any, attention_mask: Any) -> Any:
    """The first token's state (BERT's [CLS])."""
    return token_states[:, 0]


def resolve_pooling(model: str, pooling: str) -> str:
    """The backend and pooling a model string gets: ``sentence-transformers``, ``mean`` or ``cls``."""
    from ragsift.models import resolve_model

    if pooling != "auto":
        return pooling
    location = resolve_model(model)
    if location.kind == "folder" and not (Path(location.path) / "modules.json").is_file():
        return "mean"
    return "sentence-transformers"


class _Encoder:
    """One loaded encoder: texts -> a float32 array of embeddings (no normalisation)."""

    def __init__(self, model: str, params: DualEncoderParams) -> None:
        self.spec = model
        self.params = params
        self.backend = resolve_pooling(model, params.pooling)
        if self.backend == "sentence-transformers":
            from ragsift.models import load_sentence_transformer

            self.model: Any = load_sentence_transformer(model, device=params.device)
            self.tokenizer: Any = None
            if params.adapter:
                import copy

                from ragsift.scorers.encoder_adapter import apply_adapter, check_adapter_folder

                check_adapter_folder(params.adapter)
                private = copy.deepcopy(self.model)  # the loader's model is shared in the process: merge into a copy
                private[0].model = apply_adapter(private[0].model, params.adapter, copy=False)
                self.model = private
        else:
            from ragsift.models import load_encoder

            self.model, self.tokenizer = load_encoder(model, device=params.device, dtype=params.dtype)
            if params.adapter:
                from ragsift.scorers.encoder_adapter import apply_adapter

                self.model = apply_adapter(self.model, params.adapter)

    @property
    def transformer(self) -> Any:
        """The transformers model under the pooling."""
        return self.model[0].model if self.backend == "sentence-transformers" else self.model

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """The transformer's input tensors for ``texts`` (padded, truncated as :meth:`encode` does)."""
        if self.backend == "sentence-transformers":
            previous = self.model.max_seq_length
            if self.params.max_length is not None:
                self.model.max_seq_length = self.params.max_length
            try:
                features = self.model.preprocess(list(texts))
            finally:
                self.model.max_seq_length = previous
            device = next(self.transformer.parameters()).device
            return {k: v.to(device) for k, v in features.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        device = next(self.model.parameters()).device
        return dict(self.tokenizer(list(texts), padding=True, truncation=True, max_length=self._max_length(),
                                   return_tensors="pt").to(device))

    def pool(self, token_states: Any, attention_mask: Any) -> Any:
        """Token states -> one embedding per text, as :meth:`encode` pools (before any normalisation)."""
        if self.backend == "sentence-transformers":
            mode = getattr(self.model[1], "pooling_mode", None) if len(self.model) > 1 else None
            if mode not in ("mean", "cls"):
                raise ConfigError(f"DualEncoder: '{self.spec}' pools with {mode!r}; training its layers needs mean or cls pooling.")
            return (mean_pool if mode == "mean" else cls_pool)(token_states, attention_mask)
        return (mean_pool if self.backend == "mean" else cls_pool)(token_states, attention_mask)

    def _max_length(self) -> int:
        if self.params.max_length is not None:
            return self.params.max_length
        limit = getattr(self.tokenizer, "model_max_length", None) or DEFAULT_MAX_LENGTH
        positions = getattr(self.model.config, "max_position_embeddings", None) or DEFAULT_MAX_LENGTH
        return int(min(limit, positions, DEFAULT_MAX_LENGTH))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.backend == "sentence-transformers":
            return self._encode_st(texts)
        return self._encode_hf(texts)

    def _encode_st(self, texts: Sequence[str]) -> np.ndarray:
        previous = self.model.max_seq_length
        if self.params.max_length is not None:
            self.model.max_seq_length = self.params.max_length
        try:
            out = self.model.encode(
                list(texts), batch_size=self.params.batch_size, convert_to_numpy=True,
                normalize_embeddings=False, show_progress_bar=False,
            )
        finally:
            self.model.max_seq_length = previous
        return np.asarray(out, dtype=np.float32)

    def _encode_hf(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        pool = mean_pool if self.backend == "mean" else cls_pool
        device = next(self.model.parameters()).device
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.params.batch_size):
                batch = self.tokenizer(
                    list(texts[start : start + self.params.batch_size]), padding=True, truncation=True,
                    max_length=self._max_length(), return_tensors="pt",
                ).to(device)
                states = self.model(**batch).last_hidden_state
                chunks.append(pool(states, batch["attention_mask"]).float().cpu().numpy())
        return np.concatenate(chunks, axis=0).astype(np.float32)


class DualEncoderScorer(Scorer):
    """Score = ``dot`` or ``cosine`` of the query embedding and each sentence embedding.

    All sentences of all documents are encoded together in batches of ``batch_size``.
    """

    Params = DualEncoderParams
    needs_model: ClassVar[bool] = True
    extras: ClassVar[tuple[str, ...]] = ("models",)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._sentence_encoder: _Encoder | None = None
        self._query_encoder: _Encoder | None = None
        self._head: Any = None

    def warm_up(self) -> None:
        if self._sentence_encoder is not None:
            return
        if self.params.head:
            from ragsift.scorers.embedding_head import load_head

            self._head = load_head(self.params.head)
        self._sentence_encoder = _Encoder(self.params.model, self.params)
        if self.params.query_model is None or self.params.query_model == self.params.model:
            self._query_encoder = self._sentence_encoder
        else:
            self._query_encoder = _Encoder(self.params.query_model, self.params)

    @property
    def backends(self) -> dict[str, str]:
        """How the query and sentence encoders pool (after ``warm_up``)."""
        self.warm_up()
        assert self._sentence_encoder is not None and self._query_encoder is not None
        return {"query": self._query_encoder.backend, "sentence": self._sentence_encoder.backend}

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Query embeddings, one row per query (after the head, before any cosine normalisation)."""
        self.warm_up()
        assert self._query_encoder is not None
        return self._with_head(self._query_encoder.encode([self.params.query_prefix + q for q in queries]))

    def embed_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Sentence embeddings, one row per text (after the head, before any cosine normalisation)."""
        self.warm_up()
        assert self._sentence_encoder is not None
        return self._with_head(self._sentence_encoder.encode([self.params.sentence_prefix + t for t in texts]))

    def _with_head(self, embeddings: np.ndarray) -> np.ndarray:
        if self._head is None:
            return embeddings
        from ragsift.scorers.embedding_head import apply_head

        return apply_head(self._head, embeddings)

    def similarities(self, query: np.ndarray, sentences: np.ndarray) -> np.ndarray:
        """``dot`` or ``cosine`` of one query vector with each sentence row."""
        if self.params.similarity == "cosine":
            query = query / max(float(np.linalg.norm(query)), 1e-12)
            norms = np.linalg.norm(sentences, axis=1, keepdims=True)
            sentences = sentences / np.maximum(norms, 1e-12)
        return (sentences @ query).astype(np.float64)

    def score_range(self) -> tuple[float, float] | None:
        return (-1.0, 1.0) if self.params.similarity == "cosine" else None  # dot products are unbounded

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0, dtype=np.float64)
        query = self.embed_queries([example.question])[0]
        if self.params.sentence_title:
            texts = [f"{example.documents[s.doc_index].title} {s.text}" for s in sentences]
        else:
            texts = [s.text for s in sentences]
        embedded = self.embed_sentences(texts)
        if embedded.shape[1] != query.shape[0]:
            raise ConfigError(
                f"DualEncoderScorer: the query encoder gives {query.shape[0]}-dim vectors but the sentence "
                f"encoder gives {embedded.shape[1]}-dim vectors; use encoders with the same output size."
            )
        return self.similarities(query, embedded)
