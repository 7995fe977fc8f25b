"""Named datasets: the data files ragsift ships (and one of its source tree), each under a name that
``--data`` and a config's ``[dataset] path`` accept wherever a data file is accepted.

:data:`CATALOGUE` is the one table that knows them: name, role (``development``: choose on it;
``evaluation``: never trained, tuned or chosen on), number of questions, label granularity
(``sentence``: supporting-fact sentences, sentence-level evidence metrics; ``paragraph``:
supporting paragraphs, ``Example.evidence`` is None and ``metadata["supporting_docs"]`` lists
them), the loader that reads it, its file, its SHA-256, source and licence.

Every named dataset is **one file**, so a run records it as it records any file (path and
SHA-256; :meth:`NamedDataset.sha256` is the file's). ``hotpotqa-eval`` is
``hotpotqa-dev-eval251.json``: the records of ``hotpotqa-dev-sf100.json`` followed by those of
``hotpotqa-dev-eval151.json``, byte for byte (the first array's ``]`` and the second's ``[``
replaced by ``", "``), so its first 100 questions are the bundled sample's (``--limit 100``
reads the same questions as a run of the sample). Shipped files live in ``ragsift/data/``
(``ragsift/data/README.md``: sources and licences); ``hotpotqa-dev`` is in the source tree only.

What a run reads from a name: :func:`ragsift.datasets.loading.named_source` (a
:class:`~ragsift.datasets.loading.DataSource` with ``name`` set); ``resolve_data`` accepts a name
wherever it accepts a file.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ragsift.config_files import REPOSITORY
from ragsift.errors import ConfigError
from ragsift.suggestions import did_you_mean

__all__ = ["NamedDataset", "CATALOGUE", "DEVELOPMENT", "EVALUATION", "named_dataset", "dataset_names",
           "find_named_dataset", "evaluation_datasets", "shipped_data_path"]

DEVELOPMENT: Literal["development"] = "development"
EVALUATION: Literal["evaluation"] = "evaluation"

_HOTPOTQA = ("HotpotQA (Yang et al., 2018), dev set, distractor setting: 10 documents per question "
             "(2 gold + 8 distractors)")
_MIGRES = "as sampled in the data/ folder of AdelWang/MIGRES, minus every question of ragsift's other files"


@dataclass(frozen=True)
class NamedDataset:
    """One named dataset (a row of :data:`CATALOGUE`)."""

    name: str
    role: Literal["development", "evaluation"]
    #: number of questions
    n: int
    #: label granularity: ``sentence`` or ``paragraph``
    labels: Literal["sentence", "paragraph"]
    #: the registered dataset loader that reads it
    format: str
    #: the file: a name in ``ragsift/data/`` (shipped), else a path relative to the source tree's root
    file: str
    #: the file's SHA-256 (``tests/datasets/test_catalogue.py`` checks it)
    sha256: str
    source: str
    licence: str
    description: str
    #: whether the file is inside the package (else in the source tree only)
    shipped: bool = True
    #: files of ``ragsift/data/`` whose records this file holds, in order (``hotpotqa-eval``)
    derived_from: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """The dataset's files (one)."""
        return (self.file,)

    def path(self) -> Path:
        """The file; a ConfigError when this installation does not have it."""
        if self.shipped:
            return shipped_data_path(self.file)
        path = REPOSITORY / self.file
        if not path.is_file():
            raise ConfigError(f"dataset '{self.name}' ({self.file}) is in ragsift's source tree only, not in an "
                              "installed package: run from a clone of the repository, or pass the file's path.")
        return path

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``ragsift datasets --json``)."""
        out = asdict(self)
        out["derived_from"] = list(self.derived_from)
        return out


def shipped_data_path(file: str) -> Path:
    """A file of ``ragsift/data/``; a ConfigError when the installation lacks it."""
    path = Path(str(importlib.resources.files("ragsift").joinpath("data", file)))
    if not path.is_file():
        raise ConfigError(f"{path}: missing from this installation of ragsift (a shipped data file); reinstall ragsift.")
    return path


#: name -> dataset: the only table of named datasets
CATALOGUE: dict[str, NamedDataset] = {d.name: d for d in (
    NamedDataset(
        name="hotpotqa-eval", role=EVALUATION, n=251, labels="sentence", format="hotpotqa",
        file="hotpotqa-dev-eval251.json",
        sha256="d4e15486e672b669a4f4e508761d5d1ae43c919e3c32fe9c3b4031ce4677ae22",
        source=f"{_HOTPOTQA}: the 100 of hotpotqa-sf100, then 151 more {_MIGRES}",
        licence="CC BY-SA 4.0",
        description="The HotpotQA evaluation set: hotpotqa-sf100 followed by 151 more dev questions (sentence-level "
                    "supporting facts).",
        derived_from=("hotpotqa-dev-sf100.json", "hotpotqa-dev-eval151.json"),
    ),
    NamedDataset(
        name="hotpotqa-sf100", role=EVALUATION, n=100, labels="sentence", format="hotpotqa",
        file="hotpotqa-dev-sf100.json",
        sha256="cdb88e4a3b10a447fde7a55b4950941b69d715499947f42fbe640caa320dc45c",
        source=f"{_HOTPOTQA}; a sample of the official dev file distributed with a public research repository (MIT)",
        licence="CC BY-SA 4.0",
        description="The bundled sample (the default data): the first 100 questions of hotpotqa-eval.",
    ),
    NamedDataset(
        name="hotpotqa-dev", role=DEVELOPMENT, n=205, labels="sentence", format="hotpotqa",
        file="data/training/hotpotqa-dev-pool.json",
        sha256="97792c4099b169a420c36c10469164cb0c606c4491539b7b7cdb298b0688239d",
        source=f"{_HOTPOTQA}; the development split of ragsift's training pool (data/training/README.md)",
        licence="CC BY-SA 4.0", shipped=False,
        description="HotpotQA development questions: choose thresholds, k and prompts here (source tree only).",
    ),
    NamedDataset(
        name="2wiki-dev", role=DEVELOPMENT, n=40, labels="sentence", format="2wiki",
        file="2wiki-dev40.json",
        sha256="a457d4dcf8c683ca0c88116322963a16ee246b12aa4d34062518bf82f1896021",
        source=f"2WikiMultihopQA (Ho et al., 2020), dev set, {_MIGRES}; drawn at random within each question type",
        licence="Apache-2.0",
        description="2WikiMultihopQA development questions (compositional, comparison, bridge_comparison, inference; "
                    "10 documents, 2 or 4 supporting facts).",
    ),
    NamedDataset(
        name="2wiki-eval", role=EVALUATION, n=123, labels="sentence", format="2wiki",
        file="2wiki-eval123.json",
        sha256="dfa74dc8acb7e72f0c69cf0d16d6d85ddd6cccb47c9a74c499a6fba41b13e408",
        source=f"2WikiMultihopQA (Ho et al., 2020), dev set, {_MIGRES}",
        licence="Apache-2.0",
        description="The 2WikiMultihopQA evaluation set (as 2wiki-dev).",
    ),
    NamedDataset(
        name="musique-dev", role=DEVELOPMENT, n=50, labels="paragraph", format="musique",
        file="musique-ans-dev50.jsonl",
        sha256="acb500f6c9cfcdd36db5b725987cf6003895256165d574f8638fe4218c2cda83",
        source=f"MuSiQue-Ans (Trivedi et al., 2022), dev set, {_MIGRES}; drawn at random within each hop count",
        licence="CC BY 4.0",
        description="MuSiQue-Ans development questions (2-4 hops, 20 paragraphs, 2-4 supporting; answer aliases "
                    "count as gold answers).",
    ),
    NamedDataset(
        name="musique-eval", role=EVALUATION, n=150, labels="paragraph", format="musique",
        file="musique-ans-eval150.jsonl",
        sha256="d63fb762d03512fed7f02f84cfb6bbb54d589dc89186aab4a2215a7371502045",
        source=f"MuSiQue-Ans (Trivedi et al., 2022), dev set, {_MIGRES}",
        licence="CC BY 4.0",
        description="The MuSiQue-Ans evaluation set (as musique-dev).",
    ),
)}


def dataset_names(role: str | None = None) -> list[str]:
    """The named datasets (of ``role`` when given), in catalogue order."""
    return [name for name, d in CATALOGUE.items() if role is None or d.role == role]


def find_named_dataset(name: str) -> NamedDataset | None:
    """The dataset named ``name`` (exactly), or None."""
    return CATALOGUE.get(name)


def named_dataset(name: str) -> NamedDataset:
    """The dataset named ``name``; a ConfigError listing the known names otherwise."""
    found = CATALOGUE.get(name)
    if found is None:
        raise ConfigError(f"unknown dataset '{name}'. Named datasets: {', '.join(CATALOGUE)} (see 'ragsift datasets')."
                          f"{did_you_mean(name, CATALOGUE)}")
    return found


def evaluation_datasets() -> list[NamedDataset]:
    """The datasets whose role is evaluation."""
    return [d for d in CATALOGUE.values() if d.role == EVALUATION]
