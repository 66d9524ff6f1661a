"""Enriched lines decoded as the Analytics SDK (3.1.0) decodes them for the transformer: 131 fields,
each by its kind's decoder, every field's error collected in field order.

An `Event` holds the decoded values (timestamps as nanoseconds since the epoch, so that any year
Java's `Instant` holds fits) and its entities; a line that does not decode is a `ParsingError`,
the JSON object a `loader_parsing_error` bad row carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import attrs

from events_manifest._iglu.keys import SchemaKey
from events_manifest._iglu.resolver import Resolver, ResolverConfig
from events_manifest._snowplow.fields import (
    CONTEXTS,
    DERIVED_CONTEXTS,
    FIELD_KINDS,
    FIELD_NAMES,
    FIELDS,
    INDEX,
    UNSTRUCT_EVENT,
)
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.jvm import NANOS, days_from_civil
from events_manifest.errors import ManifestConfigError

CONTEXTS_URI = re.compile(r"iglu:com\.snowplowanalytics\.snowplow/contexts/jsonschema/1-0-(?:0|[1-9][0-9]*)")
UNSTRUCT_URI = re.compile(r"iglu:com\.snowplowanalytics\.snowplow/unstruct_event/jsonschema/1-0-(?:0|[1-9][0-9]*)")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
ATOMIC_SCHEMA = SchemaKey("com.snowplowanalytics.snowplow", "atomic", "jsonschema", "1-0-0")


class Entity(NamedTuple):
    """A self-describing entity: its schema key and its data (`circe` values)."""

    key: SchemaKey
    data: circe.JsonValue


@attrs.define
class Event:
    """A decoded event: `values` by field (the JSON fields' entries unused), its entities by list."""

    values: list[Any]
    contexts: list[Entity]
    unstruct: Entity | None
    derived: list[Entity]

    def get(self, name: str) -> Any:
        return self.values[INDEX[name]]


class InvalidValue(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decode(line: str, limits: Mapping[str, int] | None) -> Event | dict[str, Any]:
    """The event of a line, or its `ParsingError` (`{"type": ...}`); `limits` cuts string fields to
    their atomic schema's `maxLength`, in UTF-16 units, before they are checked."""
    fields = line.split("\t")
    if len(fields) == 1:
        return {"type": "NotTSV"}
    if len(fields) != FIELDS:
        return {"type": "FieldNumberMismatch", "fieldCount": len(fields)}
    values: list[Any] = [None] * FIELDS
    errors: list[dict[str, str]] = []
    found: dict[int, Any] = {}
    for index, (name, text) in enumerate(zip(FIELD_NAMES, fields, strict=True)):
        kind = FIELD_KINDS[name]
        try:
            if kind in "CE":
                found[index] = entities(text, kind == "E") if text else None
            else:
                if limits is not None and kind in "sS" and name in limits:
                    text = java_cut(text, limits[name])
                values[index] = _DECODERS[kind](name, text)
        except InvalidValue as e:
            errors.append({"type": "InvalidValue", "key": name, "value": text, "message": e.message})
    if errors:
        return {"type": "RowDecodingError", "errors": errors}
    return Event(values, found[CONTEXTS] or [], found[UNSTRUCT_EVENT], found[DERIVED_CONTEXTS] or [])


def atomic_limits(iglu: ResolverConfig | None) -> dict[str, int]:
    """Each atomic field's `maxLength`, from the atomic schema the resolver fetches (for
    featureFlags.truncateAtomicFields); a schema that cannot be fetched stops the run."""
    schema = Resolver(iglu).lookup(ATOMIC_SCHEMA) if iglu is not None else None
    if schema is None:
        raise ManifestConfigError(f"{ATOMIC_SCHEMA} could not be fetched from the Iglu repositories of --iglu-config")
    properties = schema.get("properties", {})
    return {name: int(p["maxLength"]) for name, p in properties.items() if isinstance(p, dict) and "maxLength" in p}


def java_cut(text: str, limit: int) -> str:
    """Java's `substring(0, limit)` when longer than `limit` UTF-16 units (half a pair kept)."""
    if len(text) <= limit // 2:
        return text
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * limit:
        return text
    return units[: 2 * limit].decode("utf-16-le", "surrogatepass")


def _string(name: str, text: str) -> str | None:
    return text or None


def _required(name: str, text: str) -> str:
    if not text:
        raise InvalidValue(f"Field {name} cannot be empty")
    return text


_INT = re.compile(r"[+-]?\d+")


def _int(name: str, text: str) -> int | None:
    if not text:
        return None
    if _INT.fullmatch(text):
        value = int(text)
        if INT_MIN <= value <= INT_MAX:
            return value
    raise InvalidValue(f"Cannot parse key {name} into integer")


_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEX = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"
_DOUBLE = re.compile(rf"([+-]?)(?:(NaN|Infinity)|({_DECIMAL})[fFdD]?|({_HEX})[fFdD]?)")


def _double(name: str, text: str) -> float | None:
    """Java's `Double.parseDouble`: trimmed, decimal or hexadecimal, NaN and Infinity, a type suffix."""
    if not text:
        return None
    match = _DOUBLE.fullmatch(text.strip("".join(map(chr, range(33)))))
    if match is None:
        raise InvalidValue(f"Cannot parse key {name} into double")
    sign, word, decimal, hexadecimal = match.groups()
    if word:
        value = float("nan") if word == "NaN" else float("inf")
    elif decimal:
        value = float(decimal)
    else:
        value = float.fromhex(hexadecimal)
    return -value if sign == "-" else value


def _boolean(name: str, text: str) -> bool | None:
    if not text:
        return None
    if text in ("1", "0"):
        return text == "1"
    raise InvalidValue(f"Cannot parse key {name} into boolean")


_INSTANT = re.compile(
    r"([0-9]{4}|\+[0-9]{5,10}|-[0-9]{4,10})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,9}))?[Zz]"
)
_MAX_YEAR = 1_000_000_000
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def parse_instant(text: str) -> int | None:
    """Java's `Instant.parse` (ISO_INSTANT, case-insensitive) in nanoseconds, or None: 24:00:00 is
    the next day's midnight and 23:59:60 (a leap second) is read as 23:59:59."""
    match = _INSTANT.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction = int((match.group(7) or "").ljust(9, "0"))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (abs(year) <= _MAX_YEAR and 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1]):
        return None
    if month == 2 and day == 29 and not leap:
        return None
    extra_day = 0
    if (hour, minute, second, fraction) == (24, 0, 0, 0):
        hour, extra_day = 0, 1
    elif (hour, minute, second) == (23, 59, 60):
        second = 59
    if hour > 23 or minute > 59 or second > 59:
        return None
    seconds = (days_from_civil(year, month, day) + extra_day) * 86_400 + hour * 3600 + minute * 60 + second
    return seconds * NANOS + fraction


LENIENT_TIMESTAMP = (
    r"^(?:[0-9]{4}|\+[0-9]{5,10}|-[0-9]{4,10})-[0-9]{2}-[0-9]{2}[ Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{0,9})?\z"
)
"""Every text `_timestamp` reads matches this (Java's `rlike` and RE2 alike); it reads some that
`CANONICAL_TIMESTAMP` does not (`T`, a year of five digits, 24:00:00), which the transformer's scan cannot
order by their text."""
CANONICAL_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?\z"
"""The shape enrichers write a timestamp in: its first 19 characters order it to the second."""


def second_of(text: str) -> int:
    """The epoch second of a `CANONICAL_TIMESTAMP`'s first 19 characters (a valid date)."""
    nanos = parse_instant(text[:19].replace(" ", "T") + "Z")
    assert nanos is not None, f"{text!r} is a valid timestamp"
    return nanos // NANOS


def _timestamp(name: str, text: str) -> int | None:
    if not text:
        return None
    nanos = parse_instant(text.replace(" ", "T") + "Z")
    if nanos is None:
        raise InvalidValue(f"Cannot parse key {name} into datetime")
    return nanos


def _required_timestamp(name: str, text: str) -> int:
    return _timestamp(name, _required(name, text))  # type: ignore[return-value]


_HEX_LONG = re.compile(r"[+-]?[0-9a-fA-F]+")


def _hex(part: str, bits: int) -> int:
    """Java's `Long.parseLong(part, 16)`, masked to its place in the UUID."""
    if not _HEX_LONG.fullmatch(part):
        raise ValueError(part)
    value = int(part, 16)
    if not -(2**63) <= value < 2**63:
        raise ValueError(part)
    return value & ((1 << bits) - 1)


LENIENT_ID = r"^[+-]?[0-9a-fA-F]+(?:-[+-]?[0-9a-fA-F]+){4}\z"
"""Every text `_uuid` reads matches this (Java's `rlike` and RE2 alike)."""
CANONICAL_ID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\z"
"""A text `_uuid` reads as itself in lower case (or not at all): the id of every other text it
reads is not its own text in any case."""


def _uuid(name: str, text: str) -> str:
    """Java's `UUID.fromString` (lenient: short groups, any case; at most 36 characters), canonical."""
    _required(name, text)
    groups = text.split("-")
    try:
        if len(text) > 36 or len(groups) != 5:
            raise ValueError(text)
        if len(text) == 36 and [len(g) for g in groups] == [8, 4, 4, 4, 12] and "+" in text:
            raise ValueError(text)  # Java's fast path for the canonical shape takes hex digits only
        a, b, c, d, e = (_hex(group, bits) for group, bits in zip(groups, (32, 16, 16, 16, 48), strict=True))
    except ValueError:
        raise InvalidValue(f"Cannot parse key {name} into UUID") from None
    return f"{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}"


_DECODERS = {
    "s": _string,
    "S": _required,
    "i": _int,
    "d": _double,
    "b": _boolean,
    "t": _timestamp,
    "T": _required_timestamp,
    "U": _uuid,
}


def _decoding_failure(message: str) -> InvalidValue:
    return InvalidValue(f"DecodingFailure at : {message}")


def _key(value: object) -> SchemaKey:
    if not isinstance(value, str) or isinstance(value, circe.Number):
        raise InvalidValue(f"Got value '{circe.dumps(value)}' with wrong type, expecting string")
    key = SchemaKey.parse(value)
    if key is None:
        version = value.rsplit("/", 1)[-1]
        if value.startswith("iglu:") and value.count("/") == 3 and "-" in version:
            raise InvalidValue(f"Invalid schema version: {version}, code: INVALID_SCHEMAVER")
        raise InvalidValue(f"Invalid Iglu URI: {value}, code: INVALID_IGLUURI")
    return key


def _self_describing(value: object) -> tuple[SchemaKey, circe.JsonValue]:
    if not isinstance(value, dict):
        raise InvalidValue(f"Got value '{circe.dumps(value)}' with wrong type, expecting object")
    if "schema" not in value:
        raise _decoding_failure("schema key is not available")
    key = _key(value["schema"])
    if "data" not in value:
        raise _decoding_failure("data key is not available")
    return key, value["data"]


def entities(text: str, unstruct: bool) -> list[Entity] | Entity:
    """A contexts column's entities, or an unstruct_event column's one entity."""
    try:
        parsed = circe.loads(text)
    except circe.JsonSyntaxError as e:
        raise InvalidValue(f"ParsingFailure: {e}") from None
    key, data = _self_describing(parsed)
    if not (UNSTRUCT_URI if unstruct else CONTEXTS_URI).fullmatch(key.uri):
        raise InvalidValue(f"Unknown payload: {key.uri}")
    if unstruct:
        return Entity(*_self_describing(data))
    if not isinstance(data, list):
        raise InvalidValue(f"Got value '{circe.dumps(data)}' with wrong type, expecting array")
    return [Entity(*_self_describing(item)) for item in data]
