"""Issue 9: every dataset loader, fed random and mutated records (wrong types, huge numbers,
deep nesting, truncated lines, random bytes), either loads or raises a RagsiftError that names
the file and a line; never another exception."""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.datasets import load_examples
from ragsift.errors import RagsiftError
from ragsift.registry import get_registry

DATA = Path(__file__).parents[1] / "data"
SHIPPED = Path(__file__).parents[2] / "ragsift" / "data"
DEEP, HUGE = "@@DEEP@@", "@@HUGE@@"  # replaced in the JSON text: json.dumps cannot write either


def _first_record(name: str, folder: Path = DATA) -> Any:
    path = folder / name
    if path.suffix == ".jsonl":
        return json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    value = json.loads(path.read_text(encoding="utf-8"))
    return value[0] if isinstance(value, list) else value["data"][0]


def _trim(value: Any) -> Any:
    """A smaller copy (at most 3 items per list) so each example stays fast."""
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trim(v) for v in value[:3]]
    return value


#: loader name -> (layout, a real record of that format)
TEMPLATES: dict[str, tuple[str, Any]] = {
    "hotpotqa": ("array", _trim(_first_record("hotpotqa-train-sf100.json"))),
    "ircot": ("jsonl", _trim(_first_record("hotpotqa-dev-ircot40.jsonl"))),
    "squad2": ("squad", _trim(_first_record("squad-v2-dev-small.json"))),
    "dpr": ("array", _trim(_first_record("dpr-nq-dev-sample.json"))),
    "retrieval": ("jsonl", _trim(_first_record("retrieval-hotpotqa-dev5.jsonl"))),
    "flashrag": ("jsonl", _trim(_first_record("flashrag-hotpotqa-dev5.jsonl"))),
    "2wiki": ("array", _trim(_first_record("2wiki-dev40.json", SHIPPED))),
    "musique": ("jsonl", _trim(_first_record("musique-ans-dev50.jsonl", SHIPPED))),
}


def test_every_registered_loader_is_covered():
    assert set(get_registry().names("dataset")) == set(TEMPLATES)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    holder = out
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = new
    return out


WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.binary(max_size=8).map(repr),
    st.lists(st.integers() | st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=4), max_size=3),
    st.just(DEEP), st.just(HUGE), st.just([]), st.just({}), st.just(-1),
)


def _render(layout: str, records: list[Any], deep: int) -> str:
    if layout == "jsonl":
        text = "\n".join(json.dumps(r) for r in records) + "\n"
    elif layout == "array":
        text = json.dumps(records, indent=1)
    else:
        text = json.dumps({"version": "v2.0", "data": records}, indent=1)
    return text.replace(json.dumps(DEEP), "[" * deep + "]" * deep).replace(json.dumps(HUGE), "9" * 5000)


@st.composite
def mutated_files(draw: st.DrawFn, name: str) -> bytes:
    layout, template = TEMPLATES[name]
    records = []
    for _ in range(draw(st.integers(1, 3))):
        record = template
        for _ in range(draw(st.integers(0, 3))):
            path = draw(st.sampled_from(list(_paths(record))))
            record = _replaced(record, path, draw(WRONG))
        records.append(record)
    data = _render(layout, records, draw(st.sampled_from([10, 100_000]))).encode("utf-8")
    mutation = draw(st.sampled_from(["none", "truncate", "insert", "delete", "random", "bom"]))
    if mutation == "random":
        return draw(st.binary(max_size=300))
    if mutation == "bom":
        return b"\xef\xbb\xbf" + data
    if mutation == "none" or not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    if mutation == "truncate":
        return data[:at]
    if mutation == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]
    return data[:at] + data[at + draw(st.integers(1, 40)) :]


def _loads_or_names_file_and_line(name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input-{name}.data"
        path.write_bytes(content)
        try:
            examples = list(load_examples(path, format=name))
        except RagsiftError as exc:
            message = str(exc)
            assert str(path) in message, message
            assert re.search(r"\bline \d+", message), message
        else:
            assert all(isinstance(ex.id, str) and isinstance(ex.question, str) for ex in examples)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_records_load_or_raise_a_located_ragsift_error(name: str, data: st.DataObject) -> None:
    _loads_or_names_file_and_line(name, data.draw(mutated_files(name)))


#: whole-file problems of format detection: no line to name
WHOLE_FILE = ("the file is empty", "could not detect the dataset format")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_detected_formats_load_or_raise_a_located_ragsift_error(data: st.DataObject) -> None:
    """Without a format (the CLI without --format) detection comes first: a file of any format,
    mutated, loads or raises a RagsiftError naming the file, and a line unless the problem is the
    whole file (empty, or in no known format)."""
    content = data.draw(mutated_files(data.draw(st.sampled_from(sorted(TEMPLATES)))))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.data"
        path.write_bytes(content)
        try:
            examples = list(load_examples(path))
        except RagsiftError as exc:
            message = str(exc)
            assert str(path) in message, message
            assert re.search(r"\bline \d+", message) or any(m in message for m in WHOLE_FILE), message
        else:
            assert all(isinstance(ex.id, str) and isinstance(ex.question, str) for ex in examples)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_unmutated_templates_load(name: str) -> None:
    layout, template = TEMPLATES[name]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ok.data"
        path.write_text(_render(layout, [template], 10))
        assert len(list(load_examples(path, format=name))) >= 1
