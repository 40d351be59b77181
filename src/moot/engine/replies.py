"""Reading what a participant sends: the one JSON object of its turn, as real models write it.

Every driver reads replies here. A reply is accepted when it holds exactly one JSON object, either bare,
inside one fenced block (```json … ```), or with prose before or after it. Raw control characters (a line
break) inside a string are read as the characters they are. When no object can be read, the problem is
stated as the JSON parser found it, with its line and column in the reply, so that a repair can fix it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from moot.engine.driver import first_error, reply_format_violation
from moot.errors import Violation

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[ \t]*\n(.*?)\n[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_DECODER = json.JSONDecoder(strict=False)  # strict=False: control characters inside strings are allowed
_MAX_STARTS = 50  # candidate "{" positions tried in prose; a reply is a turn, not a book
_CONTROL = re.compile(r"[\x00-\x1f]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)  # a JSON string literal (to the end if unclosed)
_ESCAPABLE = re.compile(r"\\.|[\x00-\x1f]", re.DOTALL)  # an escape sequence (left alone) or a raw control
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}

ReplyModel = TypeVar("ReplyModel", bound=BaseModel)


@dataclass(frozen=True)
class FoundObject:
    """The reply's JSON object: its value, its exact text with control characters escaped, and its first line."""

    value: dict[str, Any]
    text: str
    line: int


def position(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of ``index`` in ``text``."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def escape_controls(text: str) -> str:
    """``text`` (one JSON value) with every raw control character inside its strings escaped: strict JSON."""
    if _CONTROL.search(text) is None:  # no control character anywhere: nothing to escape
        return text
    return _STRING.sub(lambda string: _ESCAPABLE.sub(_escape, string.group()), text)


def _escape(match: re.Match[str]) -> str:
    """An escape sequence as it is, a raw control character as its JSON escape."""
    char = match.group()
    if len(char) == 2:
        return char
    return _CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}")


def find_object(text: str) -> FoundObject | str:
    """The single JSON object of a reply, or one sentence saying what is wrong and where."""
    fences = list(_FENCE.finditer(text))
    if len(fences) > 1:
        return f"the reply holds {len(fences)} fenced blocks; send one JSON object (in one block at most)."
    start, end = (fences[0].start(3), fences[0].end(3)) if fences else (0, len(text))
    region = text[:end]
    first = _skip_space(region, start)
    if first == end:
        return "the reply is empty; answer with one JSON object."
    if region[first] == "[":
        try:
            value, _ = _DECODER.raw_decode(region, first)
        except (json.JSONDecodeError, RecursionError):
            pass
        else:
            return f"the reply is a JSON {_kind(value)}, not an object; answer with one JSON object."
    starts = [start + m.start() for m in re.finditer(r"\{", region[start:])][:_MAX_STARTS]
    if not starts:
        shown = " ".join(region[first:].split())[:40]
        return f"the reply holds no JSON object (it begins {shown!r}); answer with one JSON object."
    error: tuple[json.JSONDecodeError, int] | None = None
    for index in starts:
        try:
            value, stop = _DECODER.raw_decode(region, index)
        except json.JSONDecodeError as exc:
            error = error or (exc, index)
            continue
        except RecursionError:
            return "the reply's JSON is nested too deeply to read; send a flat JSON object."
        second = _another_object(region, stop)
        if second is not None:
            line, _ = position(text, index)
            other, _ = position(text, second)
            return f"the reply holds more than one JSON object (lines {line} and {other}); send only one."
        line, _ = position(text, index)
        return FoundObject(value, escape_controls(region[index:stop]), line)
    assert error is not None
    return _parse_problem(text, error[0], error[1], end)


def parse_reply(
    text: str, model: type[ReplyModel], *, one_line: bool = False
) -> tuple[ReplyModel | None, Violation | None]:
    """A participant's raw reply as ``model``, or the REPLY_FORMAT violation that says what to fix and where.

    With ``one_line`` every string is collapsed to one line (for turn texts rendered line by line).
    """
    found = find_object(text)
    if isinstance(found, str):
        return None, reply_format_violation(found)
    data = one_line_strings(found.value) if one_line else found.value
    try:
        return model.model_validate(data), None
    except ValidationError as exc:
        where = f" (the object begins on line {found.line})" if found.line > 1 else ""
        return None, reply_format_violation(f"the reply does not match the schema{where}: {first_error(exc)}.")


def one_line_strings(value: Any) -> Any:
    """Every string of a parsed reply as one line."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [one_line_strings(item) for item in value]
    if isinstance(value, dict):
        return {key: one_line_strings(item) for key, item in value.items()}
    return value


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index].isspace():
        index += 1
    return index


def _another_object(text: str, after: int) -> int | None:
    """Where a second complete JSON object starts after ``after``, if any."""
    for match in list(re.finditer(r"\{", text[after:]))[:_MAX_STARTS]:
        index = after + match.start()
        try:
            value, _ = _DECODER.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return index
    return None


def _parse_problem(text: str, error: json.JSONDecodeError, start: int, end: int) -> str:
    if _unclosed(text, start, end):
        line, column = position(text, len(text[:end].rstrip()))
        return (
            f"the reply's JSON object is incomplete: it ends at line {line}, column {column} with a string, object "
            "or array still open (perhaps cut off at the token limit); answer with a shorter, complete JSON object."
        )
    line, column = position(text, error.pos)
    return f"the reply is not valid JSON at line {line}, column {column}: {error.msg}; fix it there."


def _unclosed(text: str, start: int, end: int) -> bool:
    """Whether the JSON value starting at ``start`` is still open (a string, object or array) at ``end``."""
    depth = 0
    in_string = escaped = False
    for char in text[start:end]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True


def _kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)
