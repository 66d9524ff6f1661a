"""JSON as the transformer reads and prints it: numbers kept as written, keys in their order (the
last value of a repeated key), and circe's compact printer (every ISO control character escaped,
`/` and other characters as they are)."""

from __future__ import annotations

import json
import re
from typing import Any

from events_manifest._transformer.decode import jawn

JsonValue = Any
"""A parsed JSON value: dict, list, str, `Number`, bool or None."""


class Number(str):
    """A JSON number's text, printed back as it was written (`1.50`, `1e3`, `-0`)."""

    __slots__ = ()


class JsonSyntaxError(ValueError):
    """Text that is not one JSON value."""


def _not_a_number(constant: str) -> None:
    raise JsonSyntaxError(f"{constant} is not a JSON value")


_DECODER = json.JSONDecoder(parse_float=Number, parse_int=Number, parse_constant=_not_a_number)


def loads(text: str) -> JsonValue:
    """One JSON value, strictly (no NaN, no control characters in strings, nothing after it); what
    is wrong with text that is not one, in the reference parser's words (`jawn`)."""
    try:
        return _DECODER.decode(text)
    except (json.JSONDecodeError, JsonSyntaxError) as e:
        problem = e
    except RecursionError:
        problem = None
    words = jawn.error(text)  # the reference parser's words for what is wrong
    if words is not None:
        raise JsonSyntaxError(words) from None
    if problem is None:
        raise JsonSyntaxError("nested too deeply (line 1, column 1)") from None
    raise JsonSyntaxError(str(problem)) from None


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TO_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\x9f]')


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def string(text: str) -> str:
    """A JSON string as circe prints it."""
    return '"' + _TO_ESCAPE.sub(_escape, text) + '"'


def dumps(value: JsonValue) -> str:
    """Compact JSON, as circe's `noSpaces` prints it."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: JsonValue, parts: list[str]) -> None:
    if isinstance(value, Number):
        parts.append(value)
    elif isinstance(value, str):
        parts.append(string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int | float):
        parts.append(json.dumps(value))
    elif isinstance(value, dict):
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                parts.append(",")
            parts.append(string(key))
            parts.append(":")
            _write(item, parts)
        parts.append("}")
    else:
        parts.append("[")
        for i, item in enumerate(value):
            if i:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
