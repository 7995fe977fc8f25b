"""What every labeler-fed trainer shares (Trainer.labelled, Trainer.labels_text): the labeler it
uses, its both-labels check and the card's description of the labels."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ragsift.errors import ConfigError
from ragsift.labelers.base import Labeler, SentenceLabel
from ragsift.trainers.base import TrainingJob
from ragsift.trainers.cross_encoder import CrossEncoderTrainer
from ragsift.types import Example


class _Fixed(Labeler):
    """Labels every example's question with the given labels."""

    labels: tuple[bool, ...] = (True, False)

    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        for example in examples:
            for i, label in enumerate(self.labels):
                yield SentenceLabel(example.id, example.question, "ctx", f"s{i}", label, "positive" if label else "hard_negative")


def _job(labeler: Labeler | None) -> TrainingJob:
    return TrainingJob(train=[Example("q1", "Who?", ("x",), (), ())], dev=[], output=Path("unused"), labeler=labeler)


def test_the_configs_labeler_is_used_and_both_labels_are_required():
    trainer = CrossEncoderTrainer()
    labeler, records = trainer.labelled(_job(_Fixed()), {"name": "exit-pairs"})
    assert isinstance(labeler, _Fixed) and [r.label for r in records] == [True, False]
    one_sided = _Fixed()
    one_sided.labels = (True, True)
    with pytest.raises(ConfigError, match="^CrossEncoderTrainer: the labeler gave no records with both labels"):
        trainer.labelled(_job(one_sided), {"name": "exit-pairs"})
    assert len(trainer.labelled(_job(one_sided), {"name": "exit-pairs"}, both=False)[1]) == 2


def test_without_a_labeler_the_default_is_built_and_the_card_names_it():
    labeler, _ = CrossEncoderTrainer().labelled(_job(None), {"name": "exit-pairs", "seed": 3}, both=False)
    assert labeler.registered_name == "exit-pairs" and labeler.params.seed == 3
    text = CrossEncoderTrainer.labels_text(labeler)
    assert text.startswith("records of the labeler exit-pairs ({") and '"seed": 3' in text
