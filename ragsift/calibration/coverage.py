"""The coverage check: how often the kept context held the target, against 1 - alpha.

:func:`coverage_check` takes the questions with what a compressor kept for each (compression
results, or the records of a run: :func:`kept_from_record`), and gives the observed coverage of
the target (:mod:`ragsift.calibration.targets`: the same definition calibration used) with its
exact (Clopper-Pearson) interval, the verdict against ``1 - alpha``, the mean units and tokens
kept, and a note when the threshold was calibrated on another dataset than the one evaluated:
split conformal prediction promises coverage for new questions of the calibration questions'
distribution, nothing across datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ragsift.calibration.targets import question_units
from ragsift.selectors.documents import Aggregate
from ragsift.types import CompressionResult, Example, Sentence

__all__ = ["CoverageCheck", "coverage_check", "coverage_interval", "kept_from_record", "dataset_note",
           "calibration_of", "conformal_coverage"]


@dataclass(frozen=True)
class CoverageCheck:
    """The observed coverage of ``target`` over ``n`` questions, its interval, and what was kept."""

    target: str
    level: str
    n: int
    covered: int
    coverage: float
    #: the Clopper-Pearson interval of the coverage at ``confidence``
    low: float
    high: float
    confidence: float
    #: the promised coverage, 1 - alpha (None: no alpha given)
    nominal: float | None
    #: ``"met"`` (observed >= 1 - alpha), ``"below, within the interval"`` (the interval reaches
    #: 1 - alpha: consistent with the promise) or ``"below the interval"`` (it does not)
    verdict: str | None
    #: mean units kept per question (sentences, or documents at document level) and mean
    #: sentences kept
    units_kept: float
    sentences_kept: float
    #: mean compressed tokens per question (None: no token counts given)
    tokens_kept: float | None
    #: "calibrated on X, applied to Y: no guarantee across datasets" (None: the same dataset, or unknown)
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for a terminal or a report."""
        promise = "" if self.nominal is None else f" vs 1 - alpha = {self.nominal:.3g} ({self.verdict})"
        tokens = "" if self.tokens_kept is None else f", {self.tokens_kept:.1f} tokens"
        unit = "documents" if self.level == "document" else "sentences"
        line = (f"coverage of the {self.target}: {self.covered}/{self.n} = {100 * self.coverage:.1f}% "
                f"[{100 * self.low:.1f}, {100 * self.high:.1f}]{promise}; kept {self.units_kept:.2f} {unit}{tokens}")
        return line + (f". {self.note}" if self.note else "")


def coverage_interval(covered: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion (scipy's ``binomtest``)."""
    from scipy.stats import binomtest

    ci = binomtest(covered, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def kept_from_record(record: Mapping[str, Any]) -> tuple[list[Sentence], list[int]]:
    """The sentences and kept indices of a run's record (``CompressionResult.to_record``'s
    ``sentences``: ``id``, ``doc``, ``start``, ``end``, ``text``, ``kept``)."""
    sentences, kept = [], []
    for i, s in enumerate(record["sentences"]):
        index = int(str(s["id"]).split(":")[1]) if ":" in str(s.get("id", "")) else i
        sentences.append(Sentence(int(s["doc"]), index, int(s["start"]), int(s["end"]), str(s["text"])))
        if s["kept"]:
            kept.append(i)
    return sentences, kept


def calibration_of(selector_config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``calibrated`` record of a compressor's (coarse) selector spec, if it is conformal."""
    calibrated = selector_config.get("calibrated")
    return calibrated if isinstance(calibrated, Mapping) else None


def _family(name: str | None) -> str | None:
    """The dataset a name or loader belongs to: a named dataset's loader (``2wiki-dev`` ->
    ``2wiki``), else the name itself (a loader name, or unknown)."""
    if not name:
        return None
    from ragsift.datasets.catalogue import find_named_dataset

    found = find_named_dataset(name)
    return found.format if found is not None else name


def dataset_note(calibrated_on: str | None, evaluated_on: str | None) -> str | None:
    """``"calibrated on X, applied to Y: no guarantee across datasets"`` when the two datasets
    differ (by their loader: HotpotQA's development and evaluation splits are one dataset; 2Wiki
    is another); None when they are the same or either is unknown."""
    a, b = _family(calibrated_on), _family(evaluated_on)
    if a is None or b is None or a == b:
        return None
    return (f"calibrated on {calibrated_on}, applied to {evaluated_on}: no guarantee across datasets "
            "(the coverage promise holds for new questions of the calibration questions' distribution only)")


def coverage_check(
    items: Iterable[tuple[Example, Sequence[Sentence], Sequence[int]]] | Iterable[tuple[Example, CompressionResult]],
    target: str,
    level: str = "sentence",
    alpha: float | None = None,
    *,
    tokens: Sequence[float] | None = None,
    calibrated_on: str | None = None,
    evaluated_on: str | None = None,
    confidence: float = 0.95,
    aggregate: Aggregate = "max",
    m: int | None = None,
) -> CoverageCheck:
    """The observed coverage of ``target`` at ``level`` over ``items``: ``(example, result)``
    pairs or ``(example, sentences, kept indices)`` triples (a run's records through
    :func:`kept_from_record`). ``tokens``: the compressed tokens of each question (a run's
    ``metrics["compressed_tokens"]``); ``calibrated_on`` / ``evaluated_on``: dataset names (a
    named dataset or a loader name) for the cross-dataset note; a conformal selector's
    ``calibrated`` record gives ``alpha``, ``target`` and ``dataset``."""
    covered = n = 0
    units = sentences_kept = 0.0
    for item in items:
        sentences: Sequence[Sentence]
        kept: Sequence[int]
        if len(item) == 2:
            example, result = item
            sentences, kept = result.sentences, result.kept
        else:
            example, sentences, kept = item
        table = question_units(example, sentences, target, level, aggregate=aggregate, m=m)
        covered += table.covered(kept)
        n += 1
        kept_set = set(kept)
        units += sum(bool(unit) and all(i in kept_set for i in unit) for unit in table.members)
        sentences_kept += len(kept_set)
    if n == 0:
        raise ValueError("coverage_check: no questions")
    low, high = coverage_interval(covered, n, confidence)
    coverage = covered / n
    nominal = None if alpha is None else 1.0 - alpha
    verdict = None
    if nominal is not None:
        verdict = "met" if coverage >= nominal else "below, within the interval" if high >= nominal else "below the interval"
    if tokens is not None and len(tokens) != n:
        raise ValueError(f"coverage_check: {len(tokens)} token counts for {n} questions")
    return CoverageCheck(
        target=target, level=level, n=n, covered=covered, coverage=coverage, low=low, high=high, confidence=confidence,
        nominal=nominal, verdict=verdict, units_kept=units / n, sentences_kept=sentences_kept / n,
        tokens_kept=None if tokens is None else sum(float(t) for t in tokens) / n,
        note=dataset_note(calibrated_on, evaluated_on),
    )


def conformal_coverage(examples: Iterable[Example], records: Sequence[Mapping[str, Any]], selector: Mapping[str, Any],
                       evaluated_on: str | None = None, confidence: float = 0.95) -> CoverageCheck | None:
    """The coverage check of one compressor of a run whose (coarse) ``selector`` spec is
    ``conformal`` (None for any other selector): its ``records`` matched to ``examples`` by id,
    alpha, target and level from the selector's ``calibrated`` record, tokens from the records'
    ``metrics["compressed_tokens"]`` when every record has them."""
    calibrated = calibration_of(selector)
    if calibrated is None:
        return None
    by_id = {ex.id: ex for ex in examples}
    missing = [str(r["id"]) for r in records if str(r["id"]) not in by_id]
    if missing:
        raise ValueError(f"conformal_coverage: records of questions not among the examples: {', '.join(missing[:3])}")
    items = [(by_id[str(r["id"])], *kept_from_record(r)) for r in records]
    counts = [(r.get("metrics") or {}).get("compressed_tokens") for r in records]
    tokens = None if any(c is None for c in counts) else [float(c) for c in counts if c is not None]
    return coverage_check(items, str(calibrated["target"]), str(selector.get("level", "sentence")),
                          float(calibrated["alpha"]), tokens=tokens,
                          calibrated_on=str(calibrated.get("dataset")), evaluated_on=evaluated_on, confidence=confidence,
                          aggregate=selector.get("aggregate", "max"), m=selector.get("m"))
