"""Reading records out of JSON and JSONL files, with the line of every record at hand.

Loaders validate each record with a pydantic model at this boundary; a malformed record raises
:class:`~ragsift.errors.DataFormatError` naming the file, the line (JSONL: the record's line;
JSON: the line of the offending field, and where the record starts) and what is wrong.

JSONL is streamed line by line. A JSON array is read as text and decoded one element at a time
(``json.JSONDecoder.raw_decode``), so a record's line is known without a second parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ragsift.errors import DataFormatError

__all__ = [
    "Record",
    "RecordModel",
    "read_head",
    "read_text",
    "iter_jsonl",
    "iter_json_array",
    "iter_json_or_jsonl",
    "iter_member_array",
    "iter_array_items",
    "find_member",
    "check_trailing",
    "locate",
    "parse_record",
]

_DECODER = json.JSONDecoder()
_BOM = b"\xef\xbb\xbf"
_WS = " \t\n\r"
M = TypeVar("M", bound=BaseModel)


class RecordModel(BaseModel):
    """Base of the input-record models: unknown keys are ignored (files carry many extras)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


@dataclass(frozen=True)
class Record:
    """One decoded record and where it came from.

    ``text``/``pos`` are set for records of a JSON document (so nested fields can be located);
    JSONL records carry their own line.
    """

    value: Any
    path: Path
    index: int
    line: int
    text: str | None = None
    pos: int = 0

    def line_of(self, loc: Sequence[str | int]) -> tuple[int, int]:
        """(line, column) of the field at ``loc`` inside the record (best effort: the deepest
        part of ``loc`` that exists)."""
        if self.text is None:
            return self.line, 0
        return _line_col(self.text, locate(self.text, self.pos, loc))

    def error(self, problem: str, loc: Sequence[str | int] = (), column: int | None = None) -> DataFormatError:
        """A DataFormatError at this record (and at field ``loc`` when given)."""
        line, col = self.line_of(loc) if loc else (self.line, 0)
        where = f"line {line}"
        if column is not None:
            where += f", column {column}"
        elif self.text is not None and loc:
            where += f", column {col}"
        extra = f", which starts at line {self.line}" if line != self.line else ""
        return DataFormatError(self.path, f"{where} (record {self.index + 1}{extra})", problem)


def read_head(path: str | Path, size: int = 65536) -> str:
    """The first ``size`` characters of a file (for format sniffing)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(size)


def read_text(path: Path) -> str:
    """The file as text; a byte that is not UTF-8 raises DataFormatError at its line and byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataFormatError(path, f"line {line}, byte {column}", f"not UTF-8 text ({exc.reason}); save the file as UTF-8.") from None


def _json_problem(exc: json.JSONDecodeError) -> str:
    """The decoder's message, whole: Python's "Invalid control character at" names no place
    (the location is given separately) and says nothing of the usual cause."""
    msg = exc.msg
    if msg.startswith("Invalid control character"):
        return "a raw control character (a tab or a line break) inside a string; write it as \\t or \\n"
    return msg[0].lower() + msg[1:] if msg else "not JSON"


def _value_problem(exc: BaseException) -> str:
    """JSON that parses but cannot be held: integers beyond Python's digit limit, deep nesting."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "digits" in str(exc):
        return f"a number with too many digits ({exc})"
    return str(exc)


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _error_at(path: Path, text: str, pos: int, problem: str) -> DataFormatError:
    line, col = _line_col(text, pos)
    return DataFormatError(path, f"line {line}, column {col}", problem)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _invalid(path: Path, exc: json.JSONDecodeError, line_offset: int = 0) -> DataFormatError:
    return DataFormatError(
        path, f"line {exc.lineno + line_offset}, column {exc.colno}", f"invalid JSON: {_json_problem(exc)}."
    )


def _decode_at(path: Path, text: str, pos: int) -> tuple[Any, int]:
    """``raw_decode`` at ``pos``; every failure is a DataFormatError at its line."""
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _invalid(path, exc) from None
    except (ValueError, RecursionError) as exc:
        raise _error_at(path, text, pos, f"invalid JSON: {_value_problem(exc)}.") from None


def _expect(path: Path, text: str, pos: int, chars: str, what: str) -> None:
    if pos >= len(text) or text[pos] not in chars:
        got = "the end of the file" if pos >= len(text) else repr(text[pos])
        raise _error_at(path, text, pos, f"invalid JSON: expected {what}; got {got}.")


def iter_array_items(path: Path, text: str, pos: int, end: list[int] | None = None) -> Iterator[tuple[int, Any]]:
    """(start position, value) of each element of the JSON array starting at ``text[pos]``.
    When exhausted, appends the position after the closing bracket to ``end`` (if given)."""
    _expect(path, text, pos, "[", "'['")
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        if end is not None:
            end.append(pos + 1)
        return
    while True:
        value, stop = _decode_at(path, text, pos)
        yield pos, value
        pos = _skip_ws(text, stop)
        _expect(path, text, pos, ",]", "',' or ']' after an array element")
        if text[pos] == "]":
            if end is not None:
                end.append(pos + 1)
            return
        pos = _skip_ws(text, pos + 1)


def _member_positions(text: str, pos: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of each member of the object at ``text[pos]`` (valid JSON)."""
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] == '"':
        key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        start = _skip_ws(text, _skip_ws(text, pos) + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        pos = _skip_ws(text, _skip_ws(text, end) + 1)


def find_member(text: str, pos: int, key: str) -> int | None:
    """Start of member ``key``'s value in the object at ``text[pos]``, or None."""
    if pos >= len(text) or text[pos] != "{":
        return None
    for name, start, _ in _member_positions(text, pos):
        if name == key:
            return start
    return None


def _find_element(text: str, pos: int, index: int) -> int | None:
    pos = _skip_ws(text, pos + 1)
    i = 0
    while pos < len(text) and text[pos] != "]":
        if i == index:
            return pos
        _, end = _DECODER.raw_decode(text, pos)
        pos = _skip_ws(text, _skip_ws(text, end) + 1)
        i += 1
    return None


def locate(text: str, pos: int, loc: Sequence[str | int]) -> int:
    """Position of the value at path ``loc`` below the (valid) JSON value at ``text[pos]``;
    stops at the deepest part of ``loc`` that exists."""
    for part in loc:
        if pos >= len(text):
            break
        found: int | None = None
        if text[pos] == "{" and isinstance(part, str):
            found = find_member(text, pos, part)
        elif text[pos] == "[" and isinstance(part, int):
            found = _find_element(text, pos, part)
        if found is None:
            break
        pos = found
    return pos


def iter_jsonl(path: Path) -> Iterator[Record]:
    """Records of a JSONL file, streamed; blank lines are skipped, a UTF-8 BOM is accepted."""
    index = 0
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(path, f"line {line_no}, byte {exc.start + 1}",
                                      f"not UTF-8 text ({exc.reason}); save the file as UTF-8.") from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                hint = ""
                if line.strip() in ("{", "["):
                    hint = " (this reader expects one JSON record per line: is this a pretty-printed JSON file?)"
                raise DataFormatError(path, f"line {line_no}, column {exc.colno}", f"invalid JSON: {_json_problem(exc)}{hint}.") from None
            except (ValueError, RecursionError) as exc:
                raise DataFormatError(path, f"line {line_no}", f"invalid JSON: {_value_problem(exc)}.") from None
            yield Record(value, path, index, line_no)
            index += 1


def iter_json_array(path: Path, what: str, text: str | None = None) -> Iterator[Record]:
    """Records of a file holding one JSON array (``what`` names the records in errors).
    An empty file has no records."""
    text = read_text(path) if text is None else text
    pos = _skip_ws(text, 0)
    if text.startswith("\ufeff", pos):
        pos = _skip_ws(text, pos + 1)
    if pos >= len(text):
        return
    if text[pos] != "[":
        kind = "a JSON object" if text[pos] == "{" else f"{text[pos]!r}"
        raise _error_at(path, text, pos, f"expected a JSON array of {what}; got {kind}.")
    last_pos = last_line = 0
    end: list[int] = []
    for index, (start, value) in enumerate(iter_array_items(path, text, pos, end)):
        last_line += text.count("\n", last_pos, start)
        last_pos = start
        yield Record(value, path, index, last_line + 1, text, start)
    check_trailing(path, text, end[0])


def check_trailing(path: Path, text: str, pos: int) -> None:
    """Raise if anything but whitespace follows the top-level value ending at ``pos``."""
    pos = _skip_ws(text, pos)
    if pos < len(text):
        raise _error_at(path, text, pos, "invalid JSON: extra data after the top-level value.")


def iter_member_array(path: Path, key: str, what: str, container: str) -> Iterator[Record]:
    """Records of the array under ``key`` of the JSON object a file holds (SQuAD's ``data``).
    ``container`` names the expected top-level object in errors; an empty file has no records."""
    text = read_text(path)
    pos = _skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    if pos >= len(text):
        return
    if text[pos] != "{":
        raise _error_at(path, text, pos, f"expected {container} (a JSON object); got {text[pos]!r}.")
    _, stop = _decode_at(path, text, pos)  # validates the whole document once
    check_trailing(path, text, stop)
    start = find_member(text, pos, key)
    if start is None:
        raise _error_at(path, text, pos, f"expected {container} with a '{key}' array; '{key}' is missing.")
    if text[start] != "[":
        raise _error_at(path, text, start, f"'{key}' must be an array of {what}; got {text[start]!r}.")
    last_pos = last_line = 0
    for index, (item_pos, value) in enumerate(iter_array_items(path, text, start)):
        last_line += text.count("\n", last_pos, item_pos)
        last_pos = item_pos
        yield Record(value, path, index, last_line + 1, text, item_pos)


def iter_json_or_jsonl(path: Path, what: str) -> Iterator[Record]:
    """Records of a JSON array or of a JSONL file, told apart by the first character."""
    head = read_head(path, 4096).lstrip("\ufeff" + _WS)
    if head.startswith("["):
        return iter_json_array(path, what)
    return iter_jsonl(path)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words: ``the number 1``, ``an array``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {_describe(value)}"
    if isinstance(value, str):
        return f"the string {_describe(value)}"
    if isinstance(value, list):
        return f"an array of {len(value)} item(s)"
    return f"{type(value).__name__} {_describe(value)}"


def parse_record(model: type[M], record: Record, what: str) -> M:
    """Validate ``record`` against ``model``; a problem raises DataFormatError at its line."""
    try:
        return model.model_validate(record.value)
    except ValidationError as exc:
        errors = exc.errors()
        problems = []
        for item in errors[:3]:
            loc = [p for p in item["loc"] if isinstance(p, (str, int))]
            field = ".".join(str(p) for p in loc)
            if item["type"] == "missing":
                problems.append(f"missing field '{field}'")
            elif item["type"] in ("model_type", "model_attributes_type", "dict_type") and not loc:
                problems.append(f"each record must be a JSON object {{...}}; this one is {_json_kind(item.get('input'))}")
            else:
                problems.append(f"field '{field}': {item['msg']}; got {_describe(item.get('input'))}")
        if len(errors) > 3:
            problems.append(f"and {len(errors) - 3} more problems")
        first = [p for p in errors[0]["loc"] if isinstance(p, (str, int))]
        raise record.error(f"not a valid {what}: " + "; ".join(problems) + ".", first) from None
