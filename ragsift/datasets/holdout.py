"""The evaluation file is held out: nothing is chosen on it.

:func:`refuse_evaluation_data` refuses a file whose content is the bundled evaluation sample's
(``ragsift/data/hotpotqa-dev-sf100.json``, by SHA-256, whatever the file is called), and examples
that share a question id with it (a copy in another format, or a subset). ``ragsift tune`` calls it
before it runs anything.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path

from ragsift.datasets.loading import bundled_sample_path
from ragsift.errors import ConfigError
from ragsift.provenance import sha256_file
from ragsift.types import Example

__all__ = ["evaluation_sha256", "evaluation_ids", "refuse_evaluation_data"]


@functools.cache
def evaluation_sha256() -> str:
    """The SHA-256 of the bundled evaluation sample."""
    return sha256_file(bundled_sample_path())


@functools.cache
def evaluation_ids() -> frozenset[str]:
    """The question ids of the bundled evaluation sample."""
    return frozenset(str(r["_id"]) for r in json.loads(bundled_sample_path().read_text(encoding="utf-8")))


def refuse_evaluation_data(path: Path, examples: Iterable[Example], purpose: str) -> str:
    """The SHA-256 of ``path``; a ConfigError when the file is the evaluation sample, or when one
    of ``examples`` (read from it) is one of its questions. ``purpose`` says what was refused."""
    sha = sha256_file(Path(path))
    advice = "use development questions (data/training/hotpotqa-dev-pool.json) instead"
    if sha == evaluation_sha256():
        raise ConfigError(f"{path}: this is the evaluation file (sha256 {sha[:12]}... = {bundled_sample_path().name}); "
                          f"{purpose} never uses it: {advice}.")
    held_out = evaluation_ids()
    shared = sorted({ex.id for ex in examples} & held_out)
    if shared:
        raise ConfigError(f"{path}: {len(shared)} question(s) of the evaluation file ({', '.join(shared[:3])}"
                          f"{', ...' if len(shared) > 3 else ''}); {purpose} never uses them: {advice}.")
    return sha
