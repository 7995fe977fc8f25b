"""Malformed input files: every error names the file, the line and what is wrong."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ragsift.datasets import load_examples
from ragsift.datasets.json_records import iter_json_array, locate
from ragsift.errors import DataFormatError

HOTPOT = {"_id": "a", "question": "Q?", "answer": "x", "supporting_facts": [["A", 0]], "context": [["A", ["s."]]]}
IRCOT = {
    "question_id": "q",
    "question_text": "Q?",
    "answers_objects": [{"spans": ["a"]}],
    "contexts": [{"id": "0", "title": "T", "paragraph_text": "x.  y.", "is_supporting": True}],
}


def _error(path: Path, text: str, fmt: str) -> DataFormatError:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        list(load_examples(path, format=fmt))
    assert str(path) in str(info.value)
    return info.value


def _records(n: int, base: dict) -> list[dict]:
    return [copy.deepcopy(base) for _ in range(n)]


def test_invalid_json_in_array_names_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(_records(3, HOTPOT), indent=2).replace('"answer": "x"', '"answer": "x",,', 1)
    err = _error(tmp_path / "bad.json", text, "hotpotqa")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if ",," in row)
    assert f"line {line}, column" in str(err)
    assert "invalid JSON" in str(err)


def test_missing_field_names_record_start_line(tmp_path: Path) -> None:
    records = _records(3, HOTPOT)
    del records[2]["question"]
    text = json.dumps(records, indent=2)
    err = _error(tmp_path / "missing.json", text, "hotpotqa")
    record_line = [i for i, row in enumerate(text.splitlines(), 1) if row == "  {"][2]
    assert (
        str(err)
        == f"{tmp_path / 'missing.json'}, line {record_line}, column 3 (record 3): "
        "not a valid HotpotQA question: missing field 'question'."
    )


def test_wrong_type_names_field_line_and_record_line(tmp_path: Path) -> None:
    records = _records(3, HOTPOT)
    records[1]["supporting_facts"] = [["A", "zero"]]
    text = json.dumps(records, indent=2)
    err = _error(tmp_path / "type.json", text, "hotpotqa")
    rows = text.splitlines()
    field_line = next(i for i, row in enumerate(rows, 1) if '"zero"' in row)
    record_line = [i for i, row in enumerate(rows, 1) if row == "  {"][1]
    assert f"line {field_line}" in str(err) and f"record 2, which starts at line {record_line}" in str(err)
    assert "field 'supporting_facts.0.1'" in str(err) and "integer" in str(err) and "'zero'" in str(err)


def test_single_line_array_gives_record_and_column(tmp_path: Path) -> None:
    records = _records(2, HOTPOT)
    records[1]["answer"] = 5
    err = _error(tmp_path / "one-line.json", json.dumps(records), "hotpotqa")
    assert "line 1, column" in str(err) and "(record 2)" in str(err) and "field 'answer'" in str(err)


def test_json_not_an_array(tmp_path: Path) -> None:
    err = _error(tmp_path / "obj.json", json.dumps(HOTPOT), "hotpotqa")
    assert "line 1" in str(err) and "expected a JSON array of HotpotQA questions; got a JSON object" in str(err)
    err = _error(tmp_path / "ints.json", "[1]", "hotpotqa")
    assert "line 1 (record 1)" in str(err) and "must be a JSON object {...}; this one is the number 1" in str(err)
    err = _error(tmp_path / "trail.json", json.dumps([HOTPOT]) + "\n]", "hotpotqa")
    assert "line 2, column 1" in str(err) and "extra data" in str(err)


def test_jsonl_bad_line(tmp_path: Path) -> None:
    lines = [json.dumps(IRCOT)] * 2 + ['{"question_id": "q", oops}']
    err = _error(tmp_path / "bad.jsonl", "\n".join(lines), "ircot")
    assert "line 3, column 22: invalid JSON" in str(err)


def test_jsonl_missing_nested_field_counts_blank_lines(tmp_path: Path) -> None:
    broken = copy.deepcopy(IRCOT)
    del broken["contexts"][0]["paragraph_text"]
    err = _error(tmp_path / "miss.jsonl", "\n".join([json.dumps(IRCOT), "", json.dumps(broken)]), "ircot")
    assert "miss.jsonl, line 3 (record 2)" in str(err)
    assert "missing field 'contexts.0.paragraph_text'" in str(err)


def test_jsonl_wrong_type(tmp_path: Path) -> None:
    broken = copy.deepcopy(IRCOT)
    broken["contexts"][0]["is_supporting"] = "yes"
    err = _error(tmp_path / "type.jsonl", json.dumps(IRCOT) + "\n" + json.dumps(broken) + "\n", "ircot")
    assert "line 2 (record 2)" in str(err) and "field 'contexts.0.is_supporting'" in str(err) and "'yes'" in str(err)


def test_pretty_printed_file_read_as_jsonl(tmp_path: Path) -> None:
    err = _error(tmp_path / "pretty.jsonl", json.dumps(IRCOT, indent=1), "ircot")
    assert "line 1" in str(err) and "one JSON record per line" in str(err)


def test_squad_nested_error_line(tmp_path: Path) -> None:
    squad = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [{"context": "Abc def.", "qas": [
        {"id": "1", "question": "Q", "answers": [{"text": "Abc", "answer_start": "zero"}], "is_impossible": False}]}]}]}
    text = json.dumps(squad, indent=2)
    err = _error(tmp_path / "squad.json", text, "squad2")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if '"zero"' in row)
    assert f"line {line}" in str(err) and "answer_start" in str(err) and "record 1, which starts at line 4" in str(err)
    err = _error(tmp_path / "cut.json", text[:-3], "squad2")
    assert "invalid JSON" in str(err)
    err = _error(tmp_path / "nodata.json", json.dumps({"version": "v2.0"}), "squad2")
    assert "'data' is missing" in str(err)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"question_id": "\xe9"}\n')
    with pytest.raises(DataFormatError, match=r"latin\.jsonl, line 1, byte 18: not UTF-8"):
        list(load_examples(path, format="ircot"))


@pytest.mark.parametrize("fmt", ["hotpotqa", "ircot", "squad2", "dpr", "retrieval", "flashrag"])
def test_empty_file_has_no_examples(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n \n", encoding="utf-8")
    assert list(load_examples(path, format=fmt)) == []


def test_record_lines_and_locate(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    text = '[\n  {"a": 1},\n\n  {"a": [10,\n 20]}\n]\n'
    path.write_text(text, encoding="utf-8")
    records = list(iter_json_array(path, "things"))
    assert [(r.index, r.line) for r in records] == [(0, 2), (1, 4)]
    assert records[1].line_of(["a", 1]) == (5, 2)
    assert text[locate(text, records[1].pos, ["a", 0])] == "1"
    assert locate(text, records[1].pos, ["b"]) == records[1].pos  # missing key: the record itself
