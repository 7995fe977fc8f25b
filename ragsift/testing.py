"""Conformance checks every plugin of a stage must pass, run over every registered plugin by
ragsift's tests and available to third-party packages (docs/plugins.md)::

    from ragsift import check_plugin
    check_plugin(MyScorer)          # the stage comes from the class's base; or a registered name

The checks ask a plugin what it promises (``deterministic``, a scorer's ``score_range``, a
selector's ``max_kept()`` and ``token_budget()``) rather than guess from its params. For plugins
with ``needs_model = True`` only the checks that need no weights run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ragsift.errors import ConfigError
from ragsift.registry import STAGES, get_registry
from ragsift.types import Document, EvidenceSpan, Example, Sentence, sentence_spans_from_list

__all__ = ["sample_example", "empty_example", "presplit_sentences", "check_plugin", "checks_for"]

_SENTENCES = [
    ["Marie Curie was a physicist and chemist.", " She was born in Warsaw in 1867.", " She won two Nobel Prizes."],
    ["Warsaw is the capital of Poland.", " It lies on the Vistula river."],
    ["The Eiffel Tower is in Paris.", " It was completed in 1889.", " It is 330 metres tall."],
]


def sample_example() -> Example:
    """A small example with sentence spans and gold evidence (no model needed)."""
    docs = []
    for i, (title, sents) in enumerate(zip(["Marie Curie", "Warsaw", "Eiffel Tower"], _SENTENCES, strict=True)):
        text, spans = sentence_spans_from_list(sents)
        docs.append(Document(title=title, text=text, id=f"d{i}", score=1.0 - i / 10, sentence_spans=spans))
    evidence = (
        EvidenceSpan(0, *docs[0].sentence_spans[1]),  # type: ignore[index]
        EvidenceSpan(1, *docs[1].sentence_spans[0]),  # type: ignore[index]
    )
    return Example("sample", "In which country was Marie Curie born?", ("Poland",), tuple(docs), evidence)


def empty_example() -> Example:
    return Example("empty", "Any question?", ("x",), (), ())


def _needs_model(cls: type) -> bool:
    return bool(getattr(cls, "needs_model", False))


def _build(cls: type) -> Any:
    """The plugin from its defaults; a plugin that needs params (the generic ``pipeline``) must
    refuse to build without them with a ConfigError, and is then built from ``conformance_params``."""
    try:
        return cls()
    except ConfigError:
        params: dict[str, Any] = getattr(cls, "conformance_params", {})
        if not params:
            raise
        return cls(**params)


# -- checks for every plugin ---------------------------------------------------------------
def check_builds_from_defaults(cls: type) -> Any:
    instance = _build(cls)
    assert hasattr(instance, "params"), f"{cls.__name__}: has no params after construction"
    return instance


def check_rejects_unknown_keys(cls: type) -> None:
    try:
        cls(definitely_not_a_param=1)
    except ConfigError as exc:
        message = str(exc)
        assert cls.__name__ in message and "definitely_not_a_param" in message, (
            f"{cls.__name__}: the error for an unknown key should name the plugin and the key; got {message!r}"
        )
    else:
        raise AssertionError(f"{cls.__name__}: accepted an unknown parameter")


def check_config_round_trip(cls: type) -> None:
    first = _build(cls)
    config = first.config()
    second = cls(**config)
    assert second.config() == config, f"{cls.__name__}: config() does not rebuild the same plugin"


# -- stage checks --------------------------------------------------------------------------
def check_splitter(cls: type) -> None:
    splitter = _build(cls)
    assert splitter.split(Document("t", ""), 0) == [], f"{cls.__name__}: empty document -> sentences"
    assert splitter.split_all([]) == []
    if _needs_model(cls):
        return
    example = sample_example()
    sentences = splitter.split_all(example.documents)
    assert sentences, f"{cls.__name__}: no sentences from the sample documents"
    last: tuple[int, int] = (-1, -1)
    for s in sentences:
        doc = example.documents[s.doc_index]
        assert doc.text[s.start : s.end] == s.text, f"{cls.__name__}: sentence text does not match its span"
        assert s.text == s.text.strip() and s.text, f"{cls.__name__}: sentences must be trimmed and non-empty"
        assert (s.doc_index, s.start) > last, f"{cls.__name__}: sentences out of order or overlapping"
        last = (s.doc_index, s.end - 1)
    assert splitter.split_all(example.documents) == sentences, f"{cls.__name__}: not deterministic"


def check_scorer(cls: type) -> None:
    scorer = _build(cls)
    scores = np.asarray(scorer.score(sample_example(), []))
    assert scores.shape == (0,), f"{cls.__name__}: empty input must give an empty score array"
    if _needs_model(cls):
        return
    example = sample_example()
    sentences = presplit_sentences(example)
    first = np.asarray(scorer.score(example, sentences), dtype=float)
    assert first.shape == (len(sentences),), f"{cls.__name__}: one score per sentence expected"
    assert np.all(np.isfinite(first)), f"{cls.__name__}: scores must be finite"
    low, high = scorer.score_range() or (-np.inf, np.inf)
    assert np.all((first >= low) & (first <= high)), f"{cls.__name__}: a score outside its score_range {(low, high)}"
    if scorer.deterministic:
        again = np.asarray(_build(cls).score(example, sentences), dtype=float)
        assert np.array_equal(first, again), f"{cls.__name__}: not deterministic"


def presplit_sentences(example: Example) -> list[Sentence]:
    """The example's dataset-provided sentences (no splitter involved)."""
    from ragsift.splitters.base import sentences_from_spans

    return [s for i, doc in enumerate(example.documents) for s in sentences_from_spans(doc, i, doc.sentence_spans or ())]


def check_selector(cls: type) -> None:
    selector = _build(cls)
    example = sample_example()
    assert list(selector.select(example, [], np.zeros(0)).kept) == [], f"{cls.__name__}: empty input -> kept sentences"
    if _needs_model(cls):
        return
    sentences = presplit_sentences(example)
    rng = np.random.default_rng(0)
    for _ in range(5):
        scores = rng.random(len(sentences))
        kept = list(selector.select(example, sentences, scores).kept)
        assert all(0 <= i < len(sentences) for i in kept), f"{cls.__name__}: index out of range"
        assert len(set(kept)) == len(kept), f"{cls.__name__}: an index kept twice"
        if selector.deterministic:
            again = list(_build(cls).select(example, sentences, scores).kept)
            assert kept == again, f"{cls.__name__}: not deterministic"
        most = selector.max_kept(sentences)
        assert most is None or len(kept) <= most, f"{cls.__name__}: kept {len(kept)}, over its max_kept {most}"
        budget = selector.token_budget()
        if budget is not None:
            used = sum(budget[1](sentences[i].text) for i in kept)
            assert used <= budget[0], f"{cls.__name__}: token budget {budget[0]} exceeded ({used})"


def check_assembler(cls: type) -> None:
    assembler = _build(cls)
    example = sample_example()
    sentences = presplit_sentences(example)
    assert assembler.assemble(example.documents, sentences, []) == "", f"{cls.__name__}: nothing kept -> non-empty text"
    kept = [4, 0, 2]
    text = assembler.assemble(example.documents, sentences, kept)
    for i in kept:
        assert sentences[i].text in text, f"{cls.__name__}: kept sentence missing from the context"
    for i in set(range(len(sentences))) - set(kept):
        assert sentences[i].text not in text, f"{cls.__name__}: a sentence that was not kept appears"


def check_compressor(cls: type) -> None:
    compressor = _build(cls)
    result = compressor.compress(empty_example())
    assert result.is_empty and result.text == "", f"{cls.__name__}: no documents -> a non-empty compression"
    if _needs_model(cls) or any(_needs_model(type(s)) for s in getattr(compressor, "stages", {}).values()):
        return
    example = sample_example()
    result = compressor.compress(example)
    assert all(0 <= i < len(result.sentences) for i in result.kept), f"{cls.__name__}: kept index out of range"
    assert len(result.scores) == len(result.sentences), f"{cls.__name__}: one score per sentence expected"
    if compressor.deterministic:
        again = _build(cls).compress(example)
        assert (again.kept, again.text) == (result.kept, result.text), f"{cls.__name__}: not deterministic"


_STAGE_CHECKS: dict[str, Callable[[type], None]] = {
    "splitter": check_splitter,
    "scorer": check_scorer,
    "selector": check_selector,
    "assembler": check_assembler,
    "compressor": check_compressor,
}


def checks_for(stage: str) -> list[Callable[[type], Any]]:
    """The checks a plugin of ``stage`` must pass, in order."""
    common: list[Callable[[type], Any]] = [check_builds_from_defaults, check_rejects_unknown_keys, check_config_round_trip]
    return common + ([_STAGE_CHECKS[stage]] if stage in _STAGE_CHECKS else [])


def check_plugin(plugin: str | type, name: str | type | None = None) -> None:
    """Run every conformance check of a plugin's stage on a plugin class or a registered name;
    the stage is the one the class's base declares (``check_plugin(MyScorer)``). The older
    form ``check_plugin("scorer", MyScorer)`` still works and checks the stage matches."""
    stage = None
    if name is not None:
        stage, plugin = str(plugin), name
    if isinstance(plugin, str):
        stages = [s for s in STAGES if plugin in get_registry().names(s)] if stage is None else [stage]
        if len(stages) != 1:
            raise ConfigError(f"check_plugin: '{plugin}' names a plugin of {len(stages)} stages ({', '.join(stages)}); "
                              "pass the class instead.")
        plugin = get_registry().get(stages[0], plugin)
    declared = getattr(plugin, "stage", None)
    if declared not in STAGES or stage not in (None, declared):
        raise AssertionError(f"{plugin!r} is a {declared} plugin, not a {stage}; subclass the {stage} base class.")
    for check in checks_for(declared):
        check(plugin)
