"""The JSON of ``ragsift serve``: what ``POST /compress`` takes and gives (pydantic models,
which also make the OpenAPI schema at ``/openapi.json`` and the docs at ``/docs``).

A request holds one example (``question`` and ``documents``) or several (``examples``); the
response has one result per example, in the request's order, each the record ``ragsift
compress`` writes for it (every sentence with its character span, score, keep decision and
rank; the compressed text; per-stage timings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, FiniteFloat, model_validator

from ragsift.types import Example, make_example

__all__ = ["ServiceLimits", "DocumentIn", "ExampleIn", "CompressRequest", "SentenceOut", "ResultOut", "BatchOut", "CompressResponse",
           "ErrorOut", "ProblemOut", "HealthOut", "PluginOut", "PluginField"]


@dataclass(frozen=True)
class ServiceLimits:
    """What one request may hold, and how requests are batched (``ragsift serve`` options)."""

    max_request_bytes: int = 8 * 1024 * 1024
    max_examples: int = 64
    max_documents: int = 100
    #: characters of text in one request at most (questions, titles and documents): one request is
    #: compressed in one batch, and every request that arrives meanwhile waits behind it, so this
    #: bounds how long one client can hold the service (a million characters: about 250,000 tokens)
    max_characters: int = 1_000_000
    max_batch_examples: int = 32
    max_wait_ms: float = 5.0
    #: largest answer (JSON bytes); a larger one is refused with 413
    max_response_bytes: int = 64 * 1024 * 1024
    #: seconds from a request's headers to the end of its body; slower: 408
    body_timeout_s: float = 60.0


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DocumentIn(_In):
    """A retrieved document (a plain string in ``documents`` is a document with that text)."""

    text: str = Field(description="the document's text")
    title: str = Field("", description="its title (scorers and assemblers that use titles read it)")
    id: str | None = Field(None, description="names the document in the result's document_ids (default: its position, "
                           "\"0\", \"1\", ...)")
    # JSON has no NaN or Infinity (Python's reader takes them)
    score: FiniteFloat | None = Field(None, description="the retriever's score, if any (scorers that fuse it read it)")
    sentence_spans: list[tuple[int, int]] | None = Field(
        None, description="sentence boundaries the retriever already has, as [start, end) character offsets into "
        "text (the presplit splitter uses them)")

    @model_validator(mode="after")
    def _spans_inside(self) -> DocumentIn:
        for start, end in self.sentence_spans or []:
            if not 0 <= start <= end <= len(self.text):
                raise ValueError(f"sentence span [{start}, {end}) is not inside the text ({len(self.text)} characters)")
        return self


def _text_is_a_document(value: Any) -> Any:
    if isinstance(value, str):
        return {"text": value}
    if not isinstance(value, (dict, DocumentIn)):
        raise ValueError(f"a document is its text (a string) or an object with 'text' (and optional 'title', 'id', "
                         f"'score', 'sentence_spans'); got {type(value).__name__} {str(value)[:40]}")
    return value


#: a document: an object, or a plain string (its text); the OpenAPI schema says both
DocumentField = Annotated[DocumentIn, BeforeValidator(_text_is_a_document, json_schema_input_type=str | DocumentIn)]


_DOCUMENTS = ("the retrieved documents, in the retriever's order: each a string (its text) or an object with text "
              "and optional title, id, score and sentence_spans")


class ExampleIn(_In):
    """A question with its retrieved documents."""

    question: str = Field(min_length=1, description="the question the documents were retrieved for")
    documents: list[DocumentField] = Field(description=_DOCUMENTS)
    id: str | None = Field(None, description="names the result (default: the example's position in the request, "
                           "\"0\", \"1\", ...)")
    answers: list[str] = Field([], description="gold answers, if known (no compressor of a serving config needs them; "
                               "the oracle does)")

    def to_example(self, position: int) -> Example:
        return make_example(self.question, [doc.model_dump(exclude_none=True) for doc in self.documents], self.answers,
                            id=self.id if self.id is not None else str(position), owner="POST /compress")


class CompressRequest(_In):
    """One example (``question`` + ``documents``, optional ``id``/``answers``) or a list of them
    in ``examples``; not both."""

    question: str | None = Field(None, min_length=1, description="one example: the question (with documents)")
    documents: list[DocumentField] | None = Field(None, description=f"one example: {_DOCUMENTS}")
    id: str | None = Field(None, description="one example: names its result (default \"0\")")
    answers: list[str] | None = Field(None, description="one example: gold answers, if known")
    examples: list[ExampleIn] | None = Field(None, description="several examples, instead of question and documents "
                                             "at the top level; results come back in this order")

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"question": "Who wrote Hamlet?",
         "documents": [{"title": "Hamlet", "text": "Hamlet is a tragedy. It was written by William Shakespeare."}]},
        {"examples": [{"id": "q1", "question": "Who wrote Hamlet?", "documents": ["Hamlet was written by Shakespeare."]}]},
    ]})

    @model_validator(mode="after")
    def _one_form(self) -> CompressRequest:
        single = [k for k in ("question", "documents", "id", "answers") if getattr(self, k) is not None]
        if self.examples is not None and single:
            raise ValueError(f"give either 'examples' (a list of examples) or one example's 'question' and 'documents' "
                             f"at the top level, not both (found 'examples' and {', '.join(map(repr, single))})")
        if self.examples is None and (self.question is None or self.documents is None):
            missing = [k for k in ("question", "documents") if getattr(self, k) is None]
            raise ValueError(f"missing {' and '.join(map(repr, missing))}: send {{\"question\": ..., \"documents\": [...]}} "
                             "for one example or {\"examples\": [...]} for several")
        if self.examples is not None and not self.examples:
            raise ValueError("'examples' is empty: send at least one example")
        return self

    def example_inputs(self) -> list[ExampleIn]:
        if self.examples is not None:
            return list(self.examples)
        assert self.question is not None and self.documents is not None
        return [ExampleIn(question=self.question, documents=self.documents, id=self.id, answers=self.answers or [])]


class SentenceOut(BaseModel):
    id: str = Field(description="'<document>:<sentence>' within the example")
    doc: int = Field(description="index of the document in the request")
    start: int = Field(description="first character of the sentence in its document's text")
    end: int = Field(description="one past the last character")
    text: str
    score: float | None
    kept: bool
    rank: int | None = Field(description="position in the selector's order among the kept sentences")


class ResultOut(BaseModel):
    id: str = Field(description="the example's id (as sent, else its position in the request)")
    compressor: str
    document_ids: list[str] = Field(description="the example's document ids in request order (as sent, else their "
                                    "positions): a sentence's doc indexes this list")
    kept: list[str] = Field(description="ids of the kept sentences, in the selector's order")
    empty: bool = Field(description="nothing kept (a valid outcome)")
    compressed_text: str
    sentences: list[SentenceOut]
    timings: dict[str, float] = Field(description="seconds per stage: split, score, select, assemble")
    info: dict[str, Any]


class BatchOut(BaseModel):
    """How the request was served: the batch it ran in and how long it waited."""

    examples: int = Field(description="examples compressed together in the batch this request joined")
    requests: int = Field(description="requests in that batch")
    queue_seconds: float = Field(description="from arrival to the start of the batch")
    compress_seconds: float = Field(description="the whole batch's compression time")


class CompressResponse(BaseModel):
    compressor: str = Field(description="the label of the served compressor")
    results: list[ResultOut] = Field(description="one per example, in the request's order")
    batch: BatchOut


class ProblemOut(BaseModel):
    place: str = Field(description="where in the body, e.g. body.documents[2].text")
    problem: str
    type: str | None = Field(None, description="pydantic's error type (json_invalid for a body that is not JSON)")


class ErrorOut(BaseModel):
    """Every answer that is not a result (4xx, 5xx)."""

    error: str = Field(description="what was wrong and, for a limit, which 'ragsift serve' option raises it")
    problems: list[ProblemOut] | None = Field(None, description="422 for a malformed request: its first 20 problems, "
                                                                "placed (each cut to 200 characters)")
    request_id: str | None = Field(None, description="500: the id under which the service log has the details")


class PluginField(BaseModel):
    type: str
    default: Any = None
    required: bool


class PluginOut(BaseModel):
    """One registered plugin (``ragsift plugins --json``)."""

    name: str
    description: str
    class_: str = Field(alias="class", serialization_alias="class")
    source: str = Field(description="the package or entry point that registered it")
    fields: dict[str, PluginField] = Field(description="its config params: type, default, whether required")
    extras: list[str] = Field(default_factory=list, description="the extras of ragsift it needs (pip install "
                              "'ragsift[EXTRA]'), with its default params")

    model_config = ConfigDict(populate_by_name=True)


class LimitsOut(BaseModel):
    max_request_bytes: int
    max_examples: int
    max_documents: int
    max_characters: int
    max_response_bytes: int
    body_timeout_s: float


class HealthOut(BaseModel):
    status: str = Field(description="\"ok\" while the service answers")
    ragsift: str = Field(description="ragsift's version")
    compressor: str = Field(description="the label of the served compressor")
    config: str = Field(description="the config file's name (never where it lives)")
    token_required: bool = Field(description="whether /compress and /plugins need 'Authorization: Bearer TOKEN'")
    queue: dict[str, Any] = Field(description="the batch queue: its settings and counters")
    limits: LimitsOut
