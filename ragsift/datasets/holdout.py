"""The evaluation data is held out: nothing is trained, tuned or chosen on it.

The evaluation files are the files of the catalogue's evaluation datasets
(:func:`ragsift.datasets.catalogue.evaluation_datasets`: ``hotpotqa-eval``, ``hotpotqa-sf100``,
``2wiki-eval``, ``musique-eval``) and the files they were built from (``hotpotqa-dev-eval151.json``).
:func:`refuse_evaluation_data` refuses, for ``ragsift tune``, ``train`` and ``label`` alike:

- a named evaluation dataset (``--data hotpotqa-eval``), by its name;
- a file whose content is an evaluation file's (by SHA-256, whatever the file is called);
- examples that share a question id with an evaluation question (ids compared stripped and
  case-folded: a copy in another format, or a subset);
- examples whose question text is an evaluation question's once normalised
  (:func:`normalise_question`: NFKC, case-folded, punctuation to spaces, whitespace collapsed):
  a copy whose ids were changed, or a format without ids.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from ragsift.datasets.catalogue import dataset_names, evaluation_datasets, named_dataset, shipped_data_path
from ragsift.datasets.loading import load_examples
from ragsift.errors import ConfigError
from ragsift.provenance import sha256_file
from ragsift.types import Example

__all__ = ["evaluation_files", "evaluation_hashes", "evaluation_ids", "evaluation_questions", "normalise_question",
           "normalise_id", "refuse_evaluation_data"]

_NOT_WORD = re.compile(r"[\W_]+")


def normalise_question(text: str) -> str:
    """A question's text as compared with the evaluation questions: NFKC, case-folded, every run
    of punctuation, symbols and spaces made one space, stripped."""
    return _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def normalise_id(question_id: object) -> str:
    """A question id as compared with the evaluation ids: stripped and case-folded."""
    return str(question_id).strip().casefold()


@functools.cache
def evaluation_files() -> tuple[tuple[Path, str], ...]:
    """(path, format) of every evaluation file: each evaluation dataset's file and the shipped
    files it was built from."""
    out: dict[Path, str] = {}
    for dataset in evaluation_datasets():
        out.setdefault(dataset.path(), dataset.format)
        for part in dataset.derived_from:
            out.setdefault(shipped_data_path(part), dataset.format)
    return tuple(out.items())


@functools.cache
def evaluation_hashes() -> dict[str, str]:
    """SHA-256 -> the name of the evaluation file with that content."""
    return {sha256_file(path): path.name for path, _ in evaluation_files()}


@functools.cache
def _evaluation_examples() -> tuple[tuple[str, str, str], ...]:
    """(normalised id, normalised question, file name) of every evaluation question."""
    return tuple((normalise_id(ex.id), normalise_question(ex.question), path.name)
                 for path, fmt in evaluation_files() for ex in load_examples(path, fmt))


@functools.cache
def evaluation_ids() -> frozenset[str]:
    """The question ids of every evaluation file, normalised (:func:`normalise_id`; the shipped
    ids are already stripped and lower-case)."""
    return frozenset(qid for qid, _, _ in _evaluation_examples())


@functools.cache
def evaluation_questions() -> dict[str, str]:
    """Normalised question text (:func:`normalise_question`) -> the evaluation file holding it."""
    return {question: name for _, question, name in _evaluation_examples()}


def _listed(items: list[str]) -> str:
    return ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")


def refuse_evaluation_data(path: Path | str | None, examples: Iterable[Example], purpose: str, *,
                           name: str | None = None) -> str:
    """The SHA-256 of ``path``; a ConfigError when ``name`` is a named evaluation dataset, when the
    file is an evaluation file, or when one of ``examples`` (read from it) is an evaluation question
    by id or by normalised question text. ``purpose`` says what was refused (``"ragsift tune"``).
    ``path`` None (examples that come from no file) checks the examples only and returns ``""``."""
    development = ", ".join(dataset_names("development"))
    advice = (f"use development questions instead (data/training/hotpotqa-dev-pool.json, or the named datasets "
              f"{development}: see 'ragsift datasets')")
    if name is not None and name in dataset_names("evaluation"):
        raise ConfigError(f"'{name}' is an evaluation dataset ({named_dataset(name).file}); {purpose} never uses it: "
                          f"{advice}.")
    sha = "" if path is None else sha256_file(Path(path))
    held = evaluation_hashes().get(sha)
    if held is not None:
        raise ConfigError(f"{path}: this is the evaluation file {held} (sha256 {sha[:12]}...); "
                          f"{purpose} never uses it: {advice}.")
    where = f"{path}: " if path is not None else ""
    ids, questions = evaluation_ids(), evaluation_questions()
    by_id: list[str] = []
    by_text: list[str] = []
    for ex in examples:
        if normalise_id(ex.id) in ids:
            by_id.append(ex.id)
        elif normalise_question(ex.question) in questions:
            by_text.append(f"{ex.id} ({questions[normalise_question(ex.question)]})")
    if by_id:
        raise ConfigError(f"{where}{len(by_id)} question(s) of the evaluation files by id ({_listed(sorted(by_id))}); "
                          f"{purpose} never uses them: {advice}.")
    if by_text:
        raise ConfigError(f"{where}{len(by_text)} question(s) of the evaluation files by question text, under other "
                          f"ids ({_listed(by_text)}); {purpose} never uses them: {advice}.")
    return sha
