"""What every framework adapter shares: compress one query's documents, then split the result
back into one kept text and one metadata entry per input document.

The metadata entry (``metadata["ragsift"]`` in each adapter) holds::

    {"compressor": "bm25",                      # the compressor's registered name
     "sentences": [                              # the kept sentences of this document, in document order
        {"index": 3,                             # the sentence's index in its document
         "start": 120, "end": 188,               # its character span in the ORIGINAL document text
         "score": 4.2,                           # the scorer's score (None when not a number)
         "rank": 0}],                            # its rank among all kept sentences of the query (0 = first)
     "score": 4.2,                               # the document's score: its kept sentences' highest (None: none a number)
     "sentences_total": 7,                       # sentences the splitter found in this document
     "original_chars": 1034}                     # length of the original document text

These are the fields of ``ragsift compress`` records (``CompressionResult.to_record``), so an
adapter's output can be checked against the CLI's.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, cast

from ragsift.api import load_compressor
from ragsift.compressors.base import Compressor
from ragsift.errors import MissingDependencyError, UsageError
from ragsift.registry import build_plugin
from ragsift.types import DocumentValue, make_example

__all__ = ["METADATA_KEY", "SPANS_KEY", "CompressorSpec", "SiftedDocument", "DocumentSifter", "SiftingAdapter", "build_compressor",
           "split_record", "missing_framework"]

#: the metadata key under which adapters put ragsift's per-document record
METADATA_KEY = "ragsift"
#: the metadata key of a document's sentence boundaries ([start, end) character offsets into its text)
SPANS_KEY = "sentence_spans"

#: how an adapter is told which compressor to use: a config name or path (``"bm25"``,
#: ``"configs/embedding.toml"``), a compressor spec table (``{"name": "bm25", "selector": {"k": 3}}``)
#: or a built :class:`~ragsift.compressors.base.Compressor`
CompressorSpec = str | PathLike[str] | Mapping[str, Any] | Compressor


#: one lock per compressor: adapters that share a compressor take turns with it
_LOCKS: weakref.WeakKeyDictionary[Compressor, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def _lock_for(compressor: Compressor) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(compressor, threading.Lock())


def missing_framework(module: str, framework: str, extra: str, error: ImportError) -> MissingDependencyError:
    """The error an adapter module raises when its framework is not installed."""
    return MissingDependencyError(
        f"{module} needs {framework}, which is not installed ({error}): pip install 'ragsift[{extra}]'"
    )


@dataclass(frozen=True, slots=True)
class SiftedDocument:
    """One input document that kept at least one sentence."""

    #: its position in the input list
    index: int
    #: its kept sentences, in document order, joined by the sifter's separator
    text: str
    #: the ``"ragsift"`` metadata entry (module docstring)
    metadata: dict[str, Any]


def build_compressor(compressor: CompressorSpec, owner: str) -> Compressor:
    """A compressor from what an adapter was given (see :data:`CompressorSpec`)."""
    if isinstance(compressor, Compressor):
        return compressor
    if isinstance(compressor, Mapping):
        return cast(Compressor, build_plugin("compressor", compressor, owner))
    if isinstance(compressor, (str, PathLike)):
        return load_compressor(str(compressor))
    raise UsageError(f"{owner}: 'compressor' must be a config name or path, a compressor spec table or a ragsift "
                     f"Compressor; got {type(compressor).__name__} {compressor!r:.60}.")


class DocumentSifter:
    """A compressor applied to one query's documents at a time, its result split per document.

    Thread-safe: calls on one compressor are serialised, also across sifters that share it (a
    compressor and its models are not re-entrant), so async adapters may run it in worker
    threads. Models load on the first call, or at :meth:`warm_up`.
    """

    def __init__(self, compressor: CompressorSpec, *, sentence_separator: str = " ", owner: str = "DocumentSifter") -> None:
        if not isinstance(sentence_separator, str):
            raise UsageError(f"{owner}: 'sentence_separator' must be a string; got {type(sentence_separator).__name__}.")
        self.owner = owner
        self.compressor = build_compressor(compressor, owner)
        self.sentence_separator = sentence_separator
        self._warm = False  # plugins' warm_up() is idempotent; this only saves the calls

    @property
    def _lock(self) -> threading.Lock:
        """The compressor's lock, found when needed (not stored: a sifter pickles without one)."""
        return _lock_for(self.compressor)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as the compressor's spec (:meth:`spec`), not its loaded models: unpickling
        builds the compressor again, its models loading on first use."""
        return {"spec": self.spec(), "sentence_separator": self.sentence_separator, "owner": self.owner}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spec"], sentence_separator=state["sentence_separator"], owner=state["owner"])  # type: ignore[misc]

    @property
    def name(self) -> str:
        """The compressor's registered name (``bm25``), as ``ragsift compress`` labels its records."""
        return str(self.compressor.registered_name or type(self.compressor).__name__)

    def spec(self) -> dict[str, Any]:
        """A compressor spec table that rebuilds this compressor (``{"name": ..., **config()}``)."""
        return {"name": self.name, **self.compressor.config()}

    def warm_up(self) -> None:
        with self._lock:
            self._warm_up_locked()

    def _warm_up_locked(self) -> None:
        if not self._warm:
            self.compressor.warm_up()
            self._warm = True

    def sift(self, query: str, documents: Sequence[DocumentValue]) -> list[SiftedDocument]:
        """Compress ``documents`` (``(title, text)`` pairs or mappings with ``text``, ``title``,
        ``sentence_spans``: see :func:`~ragsift.types.make_example`) for ``query``: the documents
        that keep at least one sentence, in input order."""
        if not isinstance(query, str):
            raise UsageError(f"{self.owner}: the query must be a string; got {type(query).__name__} {query!r:.60}.")
        if not documents:
            return []
        example = make_example(query, documents, id="query", owner=self.owner)
        with self._lock:
            self._warm_up_locked()
            record = self.compressor.compress(example).to_record()
        return split_record(record, [doc.text for doc in example.documents], self.name, self.sentence_separator)


class SiftingAdapter:
    """What the framework adapters share: a :class:`DocumentSifter` built at once from
    ``compressor`` (a :data:`CompressorSpec`; models load on first use or at :meth:`warm_up`), the
    compressor's name, and each document read as a ``(title, text)`` pair, the title from its
    metadata under ``title_key``. Mixed in before the framework's base class."""

    if TYPE_CHECKING:  # fields of the adapter (pydantic fields or plain attributes)
        title_key: str
        sentence_separator: str
        _sifter: DocumentSifter

    def __init__(self, compressor: CompressorSpec = "bm25", **fields: Any) -> None:
        """For adapters that are pydantic models: ``compressor`` and the other fields validated
        by the framework's model, then the sifter built."""
        super().__init__(**{**fields, "compressor": compressor})
        self._start_sifter(compressor)

    def _start_sifter(self, compressor: CompressorSpec) -> None:
        self._sifter = DocumentSifter(compressor, sentence_separator=self.sentence_separator, owner=type(self).__name__)

    @property
    def compressor_name(self) -> str:
        """The compressor's registered name (``bm25``)."""
        return self._sifter.name

    def warm_up(self) -> None:
        """Load the compressor's models now rather than on the first query (once)."""
        self._sifter.warm_up()

    def titled(self, metadata: Mapping[str, Any], text: Any) -> dict[str, Any]:
        """One document for :meth:`DocumentSifter.sift`: its text, its title from
        ``metadata[title_key]`` ("" when missing or not a string) and the sentence boundaries in
        ``metadata["sentence_spans"]`` when the retriever gave them (the ``presplit`` splitter
        uses them)."""
        title = metadata.get(self.title_key, "")
        doc = {"title": title if isinstance(title, str) else "", "text": text}
        if metadata.get(SPANS_KEY) is not None:
            doc["sentence_spans"] = metadata[SPANS_KEY]
        return doc


def split_record(record: Mapping[str, Any], texts: Sequence[str], name: str, separator: str = " ") -> list[SiftedDocument]:
    """Split a ``ragsift compress`` record of documents ``texts`` into one :class:`SiftedDocument`
    per document that kept a sentence."""
    totals = [0] * len(texts)
    kept: dict[int, list[dict[str, Any]]] = {}
    for sentence in record["sentences"]:
        totals[sentence["doc"]] += 1
        if sentence["kept"]:
            kept.setdefault(sentence["doc"], []).append(sentence)
    out = []
    for doc in sorted(kept):
        sentences = sorted(kept[doc], key=lambda s: s["start"])
        scores = [s["score"] for s in sentences if isinstance(s["score"], (int, float)) and not isinstance(s["score"], bool)]
        out.append(SiftedDocument(
            index=doc,
            text=separator.join(s["text"] for s in sentences),
            metadata={
                "compressor": name,
                "sentences": [{"index": int(s["id"].rpartition(":")[2]), "start": s["start"], "end": s["end"], "score": s["score"],
                               "rank": s["rank"]} for s in sentences],
                "score": max(scores) if scores else None,
                "sentences_total": totals[doc],
                "original_chars": len(texts[doc]),
            },
        ))
    return out
