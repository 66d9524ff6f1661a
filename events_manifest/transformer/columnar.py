"""The transformer's parse over a whole Arrow batch: the TSV split, every atomic field's check and
its wide-row JSON text computed column by column (Arrow compute kernels), the line assembled per
set of entity columns in the reference's key order (`widerow.key_order`).

It takes the lines every enricher writes: canonical values (an int as `-12`, a UUID in lower case, a
timestamp as `yyyy-MM-dd HH:mm:ss[.SSS]`, no control characters), whose JSON text is a rewrite of
their own. Any other line (a value in another shape the Analytics SDK still reads, a value it does
not, a line of another width) is left to the per-event decoder (`event.decode`), which renders it
or builds the reference's exact error. Both paths give the same rows (a property test holds them
to it).
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest.iglu.keys import SchemaKey
from events_manifest.snowplow.fields import (
    CONTEXTS,
    DERIVED_CONTEXTS,
    FIELD_KINDS,
    FIELD_NAMES,
    FIELDS,
    UNSTRUCT_EVENT,
)
from events_manifest.transformer import sdjson, widerow
from events_manifest.transformer.bad_rows import MINIMUM_TIMESTAMP_FIELDS
from events_manifest.transformer.event import CONTEXTS_URI, UNSTRUCT_URI, InvalidValue, entities
from events_manifest.transformer.jvm import days_from_civil, double_to_string

_CONTROL = r"[\x{00}-\x{1f}\x{7f}-\x{9f}]"
_INT = r"^(?:0|-?[1-9][0-9]{0,8})$"
"""Ints written as Java writes them, short enough to be within Int's range whatever the digits."""
_DOUBLE = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,17})?")
_JAVA_PRINTS = r"^-?(?:[1-9][0-9]{0,6}\.(?:0|[0-9]{0,7}[1-9])|0\.0{0,2}[1-9](?:[0-9]{0,11}[1-9])?|0\.0)$"
"""Decimals Java's `Double.toString` prints as they are written: at most 15 significant digits (so
the shortest digits of their double are theirs), the last one not 0 (or `.0` alone), between 1e-3
and 1e7 (printed without exponent)."""
_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?$"
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
NANOS = 1_000_000_000


def fields(text: pa.Array) -> tuple[np.ndarray, list[pa.Array]]:
    """The lines of 131 fields (a mask) and their fields, column by column."""
    parts = pc.split_pattern(text, "\t")
    width = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    wide = width == FIELDS
    values = pc.list_flatten(parts.filter(pa.array(wide)))
    count = int(wide.sum())
    columns = [values.take(pa.array(np.arange(j, count * FIELDS, FIELDS))) for j in range(FIELDS)]
    return wide, columns


def _mask(array: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _quoted(column: pa.Array) -> pa.Array:
    """A string column as JSON strings (no control characters in it: the caller checked)."""
    escaped = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
    return pc.binary_join_element_wise('"', escaped, '"', "")


def _or_null(column: pa.Array, text: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(column, ""), pa.scalar("null"), text)


@attrs.frozen
class _Timestamps:
    """A timestamp column's validity, JSON text (`Instant.toString`), seconds and nanoseconds."""

    ok: np.ndarray
    text: pa.Array
    seconds: np.ndarray
    nanos: np.ndarray
    present: np.ndarray


def _timestamps(column: pa.Array, required: bool) -> _Timestamps:
    present = _mask(pc.not_equal(column, ""))
    dates = pc.utf8_slice_codeunits(column, 0, 10)
    unique = pc.unique(dates)
    day_of = [_days(date) for date in unique.to_pylist()]
    days = np.array([0 if day is None else day for day in day_of], dtype=np.int64)
    real = np.array([day is not None for day in day_of], dtype=bool)
    where = np.asarray(pc.index_in(dates, unique).to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = present & _mask(pc.match_substring_regex(column, _TIMESTAMP)) & real[where]
    ok = np.where(present, valid, not required)
    hours = _number(pc.utf8_slice_codeunits(column, 11, 13), valid)
    minutes = _number(pc.utf8_slice_codeunits(column, 14, 16), valid)
    secs = _number(pc.utf8_slice_codeunits(column, 17, 19), valid)
    fraction = pc.utf8_rpad(pc.utf8_slice_codeunits(column, 20, 29), 9, "0")
    nanos = _number(fraction, valid)
    seconds = days[where] * 86_400 + hours * 3600 + minutes * 60 + secs
    digits = pc.if_else(
        pc.equal(fraction, "000000000"),
        pa.scalar(""),
        pc.if_else(
            pc.ends_with(fraction, "000000"),
            pc.binary_join_element_wise(".", pc.utf8_slice_codeunits(fraction, 0, 3), ""),
            pc.if_else(
                pc.ends_with(fraction, "000"),
                pc.binary_join_element_wise(".", pc.utf8_slice_codeunits(fraction, 0, 6), ""),
                pc.binary_join_element_wise(".", fraction, ""),
            ),
        ),
    )
    text = pc.binary_join_element_wise('"', dates, "T", pc.utf8_slice_codeunits(column, 11, 19), digits, 'Z"', "")
    return _Timestamps(ok, _or_null(column, text), seconds, nanos, valid)


def _days(date: str) -> int | None:
    """The day count of `yyyy-MM-dd`, or None for a date that does not exist."""
    if len(date) != 10 or date[4] != "-" or date[7] != "-" or not (date[:4] + date[5:7] + date[8:]).isdigit():
        return None
    year, month, day = int(date[:4]), int(date[5:7]), int(date[8:])
    if not 1 <= month <= 12 or not 1 <= day <= _MONTH_DAYS[month - 1]:
        return None
    if month == 2 and day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return None
    return days_from_civil(year, month, day)


def _number(column: pa.Array, ok: np.ndarray) -> np.ndarray:
    """Digits as int64 where `ok` (zero elsewhere)."""
    digits = pc.if_else(pa.array(ok), column, pa.scalar("0"))
    return np.asarray(pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _doubles(column: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """A double column's validity and JSON text (Java's `Double.toString`): a plain decimal that
    Java prints as written is its own text (`_JAVA_PRINTS`); any other value is printed here."""
    present = _mask(pc.not_equal(column, ""))
    own = _mask(pc.match_substring_regex(column, _JAVA_PRINTS))
    ok = np.ones(len(column), dtype=bool)
    texts = np.array(pc.if_else(pa.array(own), column, pa.scalar("null")).to_pylist(), dtype=object)
    others = np.flatnonzero(present & ~own)
    for i, value in zip(others.tolist(), column.take(pa.array(others)).to_pylist(), strict=True):
        if _DOUBLE.fullmatch(value):
            texts[i] = double_to_string(float(value))
        else:
            ok[i] = False
    return ok, pa.array(texts, pa.string()) if len(others) else pc.if_else(pa.array(own), column, pa.scalar("null"))


_BOOLEANS = {"": "null", "0": "false", "1": "true"}


def atomic_columns(
    columns: list[pa.Array], minimum: int | None
) -> tuple[np.ndarray, dict[str, pa.Array], dict[str, _Timestamps]]:
    """Every atomic field's JSON text, column by column, and which lines are in the shapes this
    path takes (and, with `minimum`, not before it)."""
    count = len(columns[0])
    ok = np.ones(count, dtype=bool)
    texts: dict[str, pa.Array] = {}
    stamps: dict[str, _Timestamps] = {}
    for index, name in enumerate(FIELD_NAMES):
        kind, column = FIELD_KINDS[name], columns[index]
        if kind in "CE":
            continue
        if kind in "sS":
            ok &= ~_mask(pc.match_substring_regex(column, _CONTROL))
            if kind == "S":
                ok &= _mask(pc.not_equal(column, ""))
            texts[name] = _or_null(column, _quoted(column))
        elif kind == "U":
            ok &= _mask(pc.match_substring_regex(column, _UUID))
            texts[name] = _quoted(column)
        elif kind == "i":
            ok &= _mask(pc.or_(pc.equal(column, ""), pc.match_substring_regex(column, _INT)))
            texts[name] = _or_null(column, column)
        elif kind == "b":
            ok &= _mask(pc.is_in(column, pa.array(list(_BOOLEANS))))
            texts[name] = pc.if_else(
                pc.equal(column, "1"), pa.scalar("true"), pc.if_else(pc.equal(column, "0"), "false", "null")
            )
        elif kind == "d":
            valid, texts[name] = _doubles(column)
            ok &= valid
        else:
            stamp = _timestamps(column, kind == "T")
            ok &= stamp.ok
            texts[name], stamps[name] = stamp.text, stamp
    if minimum is not None:
        seconds, nanos = divmod(minimum, NANOS)
        for name in MINIMUM_TIMESTAMP_FIELDS:
            stamp = stamps[name]
            early = stamp.present & ((stamp.seconds < seconds) | ((stamp.seconds == seconds) & (stamp.nanos < nanos)))
            ok &= ~early
    return ok, texts, stamps


class _Entity(msgspec.Struct):
    schema: str
    data: msgspec.Raw


class _Contexts(msgspec.Struct):
    schema: str
    data: list[_Entity]


class _Unstruct(msgspec.Struct):
    schema: str
    data: _Entity


_DECODERS: dict[bool, msgspec.json.Decoder[Any]] = {
    False: msgspec.json.Decoder(_Contexts),
    True: msgspec.json.Decoder(_Unstruct),
}
_ENCODER = msgspec.json.Encoder()
_ANY = msgspec.json.Decoder()
_C1 = re.compile(rb"\x7f|\xc2[\x80-\x9f]")
"""U+007F to U+009F in UTF-8: circe escapes them, msgspec does not (every other character the two
write alike, escapes included)."""

Pairs = list[tuple[SchemaKey, str]]


def _compact(text: bytes, unstruct: bool) -> Pairs | None:
    """A JSON column's entities (key, data text) when its envelope is written as enrichment writes
    it (compact, schema then data, no escape); None for any other text (the decoder then reads it).
    A data is taken as it stands when msgspec, re-encoding it, writes it as it stands (compact, the
    escapes circe writes, numbers as both print them) and it holds no U+007F to U+009F; else it is
    printed from its own parse (`sdjson`)."""
    try:
        envelope: _Contexts | _Unstruct = _DECODERS[unstruct].decode(text)
        if _ENCODER.encode(envelope) != text:
            return None
        if not (UNSTRUCT_URI if unstruct else CONTEXTS_URI).fullmatch(envelope.schema):
            return None
        found: Pairs = []
        for item in [envelope.data] if isinstance(envelope, _Unstruct) else envelope.data:
            raw = bytes(item.data)
            key = SchemaKey.parse(item.schema)
            if key is None:
                return None
            if _C1.search(raw) or _ENCODER.encode(_ANY.decode(raw)) != raw:
                found.append((key, sdjson.dumps(sdjson.loads(raw.decode()))))  # numbers as written, escapes
            else:
                found.append((key, raw.decode()))
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return found


def _column(text: bytes | None, unstruct: bool) -> Pairs:
    """A JSON column's entities, by `_compact` or else by the decoder (`InvalidValue` if bad)."""
    if not text:
        return []
    pairs = _compact(text, unstruct)
    if pairs is not None:
        return pairs
    found = entities(text.decode(), unstruct)
    return widerow.texts(found if isinstance(found, list) else [found])


def entity_parts(columns: list[pa.Array], ok: np.ndarray) -> tuple[list[dict[str, str] | None], list[list[str]]]:
    """Each taken line's entity columns (their JSON) and entity types (`ENTITY URI`), from its
    three JSON fields; a line whose JSON the decoder refuses is not taken (`ok` cleared)."""
    contexts, unstruct, derived = (
        columns[i].cast(pa.binary()).to_pylist() for i in (CONTEXTS, UNSTRUCT_EVENT, DERIVED_CONTEXTS)
    )
    extras: list[dict[str, str] | None] = [None] * len(ok)
    types: list[list[str]] = [[] for _ in range(len(ok))]
    for i in np.flatnonzero(ok).tolist():
        try:
            found_contexts = _column(contexts[i], False)
            found_unstruct = _column(unstruct[i], True)
            found_derived = _column(derived[i], False)
        except InvalidValue:
            ok[i] = False
            continue
        event = found_unstruct[0] if found_unstruct else None
        extras[i] = widerow.entity_columns(found_contexts, found_derived, event)
        keys = widerow.entity_types(
            [key for key, _ in found_contexts], [key for key, _ in found_derived], event and event[0]
        )
        types[i] = [f"{entity} {uri}" for uri, entity in keys]
    return extras, types


def lines(texts: dict[str, pa.Array], extras: list[dict[str, str] | None], rows: np.ndarray) -> pa.Array:
    """The wide-row JSON lines of `rows`: for each set of extra columns, one join of the columns'
    texts in that set's key order."""
    latitude, longitude = texts["geo_latitude"], texts["geo_longitude"]
    located = _mask(pc.and_(pc.not_equal(latitude, "null"), pc.not_equal(longitude, "null")))
    geo = pc.binary_join_element_wise('"', latitude, ",", longitude, '"', "")
    groups: dict[tuple[str, ...], list[int]] = {}
    for row in rows.tolist():
        extra = extras[row]
        assert extra is not None
        names = (*extra, widerow.GEO_LOCATION) if located[row] else tuple(extra)
        groups.setdefault(tuple(sorted(names)), []).append(row)
    out: list[pa.Array] = []
    order: list[int] = []
    for names, members in groups.items():
        take = pa.array(members, pa.int64())
        extra_columns = {
            name: pa.array([extras[row][name] for row in members], pa.string())  # type: ignore[index]
            for name in names
            if name != widerow.GEO_LOCATION
        }
        if widerow.GEO_LOCATION in names:
            extra_columns[widerow.GEO_LOCATION] = geo.take(take)
        parts: list[Any] = []
        for position, key in enumerate(widerow.key_order(names)):
            parts.append(("{" if position == 0 else ",") + f'"{key}":')
            parts.append(extra_columns[key] if key in extra_columns else texts[key].take(take))
        parts.append("}")
        out.append(pc.binary_join_element_wise(*parts, ""))
        order.extend(members)
    if not out:
        return pa.array([], pa.string())
    return pa.concat_arrays(out).take(pa.array(np.argsort(np.array(order, dtype=np.int64))))
