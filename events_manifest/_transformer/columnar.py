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

import functools
import itertools
import re
from typing import Any

import attrs
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._iglu.keys import SchemaKey
from events_manifest._snowplow.fields import (
    CONTEXTS,
    DERIVED_CONTEXTS,
    FIELD_KINDS,
    FIELD_NAMES,
    FIELDS,
    UNSTRUCT_EVENT,
)
from events_manifest._snowplow.parsing import Spans, as_bytes
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import (
    CANONICAL_TIMESTAMP,
    CONTEXTS_URI,
    UNSTRUCT_URI,
    Entity,
    Event,
    InvalidValue,
    entities,
)
from events_manifest._transformer.decode.jvm import days_from_civil, double_to_string
from events_manifest._transformer.output import widerow
from events_manifest._transformer.output.bad_rows import MINIMUM_TIMESTAMP_FIELDS
from events_manifest._transformer.output.entity_types import type_text
from events_manifest._transformer.output.parquet import Entities

_CONTROL = r"[\x{00}-\x{08}\x{0a}-\x{1f}\x{7f}-\x{9f}]"
"""What a JSON string escapes, but the tab between fields: a line holding any is left to the decoder."""
_INT = r"^(?:0|-?[1-9][0-9]{0,8})$"
"""Ints written as Java writes them, short enough to be within Int's range whatever the digits."""
_DOUBLE = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,17})?")
_JAVA_PRINTS = r"^-?(?:[1-9][0-9]{0,6}\.(?:0|[0-9]{0,7}[1-9])|0\.0{0,2}[1-9](?:[0-9]{0,11}[1-9])?|0\.0)$"
"""Decimals Java's `Double.toString` prints as they are written: at most 15 significant digits (so
the shortest digits of their double are theirs), the last one not 0 (or `.0` alone), between 1e-3
and 1e7 (printed without exponent)."""
_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
NANOS = 1_000_000_000


def fields(text: pa.Array, *, json: bool = True) -> tuple[np.ndarray, list[pa.Array]]:
    """The lines of 131 fields (a mask), and their fields, column by column. With `json`, only
    lines without a control character but tabs: they are rendered as JSON, where the decoder
    writes a string's escapes; events and their values hold the characters as they are."""
    spans = Spans(as_bytes(text))
    wide = spans.count == FIELDS
    if json:
        wide &= ~_mask(pc.match_substring_regex(text, _CONTROL))
    return wide, spans.columns(wide, text.type)


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
    text: pa.Array | None
    seconds: np.ndarray
    nanos: np.ndarray
    present: np.ndarray


def _timestamps(column: pa.Array, required: bool, render: bool) -> _Timestamps:
    present = _mask(pc.not_equal(column, ""))
    dates = pc.utf8_slice_codeunits(column, 0, 10)
    unique = pc.unique(dates)
    day_of = [_days(date) for date in unique.to_pylist()]
    days = np.array([0 if day is None else day for day in day_of], dtype=np.int64)
    real = np.array([day is not None for day in day_of], dtype=bool)
    where = np.asarray(pc.index_in(dates, unique).to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = present & _mask(pc.match_substring_regex(column, CANONICAL_TIMESTAMP)) & real[where]
    ok = np.where(present, valid, not required)
    hours = _number(pc.utf8_slice_codeunits(column, 11, 13), valid)
    minutes = _number(pc.utf8_slice_codeunits(column, 14, 16), valid)
    secs = _number(pc.utf8_slice_codeunits(column, 17, 19), valid)
    fraction = pc.utf8_rpad(pc.utf8_slice_codeunits(column, 20, 29), 9, "0")
    nanos = _number(fraction, valid)
    seconds = days[where] * 86_400 + hours * 3600 + minutes * 60 + secs
    if not render:
        return _Timestamps(ok, None, seconds, nanos, valid)
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


def _doubles(column: pa.Array, render: bool) -> tuple[np.ndarray, pa.Array | None]:
    """A double column's validity and (with `render`) JSON text (Java's `Double.toString`): a plain
    decimal that Java prints as written is its own text (`_JAVA_PRINTS`); any other value is
    printed here."""
    present = _mask(pc.not_equal(column, ""))
    own = _mask(pc.match_substring_regex(column, _JAVA_PRINTS))
    ok = np.ones(len(column), dtype=bool)
    others = np.flatnonzero(present & ~own)
    written = column.take(pa.array(others)).to_pylist()
    if not render:
        ok[[i for i, value in zip(others.tolist(), written, strict=True) if not _DOUBLE.fullmatch(value)]] = False
        return ok, None
    texts = np.array(pc.if_else(pa.array(own), column, pa.scalar("null")).to_pylist(), dtype=object)
    for i, value in zip(others.tolist(), written, strict=True):
        if _DOUBLE.fullmatch(value):
            texts[i] = double_to_string(float(value))
        else:
            ok[i] = False
    return ok, pa.array(texts, pa.string()) if len(others) else pc.if_else(pa.array(own), column, pa.scalar("null"))


_BOOLEANS = {"": "null", "0": "false", "1": "true"}


def atomic_columns(
    columns: list[pa.Array], minimum: int | None, *, render: bool = True
) -> tuple[np.ndarray, dict[str, pa.Array], dict[str, _Timestamps]]:
    """Which lines are in the shapes this path takes (and, with `minimum`, not before it), and
    with `render` every atomic field's JSON text, column by column (the wide-row line's; the
    decoded events of `events` need none)."""
    count = len(columns[0])
    ok = np.ones(count, dtype=bool)
    texts: dict[str, pa.Array] = {}
    stamps: dict[str, _Timestamps] = {}
    for index, name in enumerate(FIELD_NAMES):
        kind, column = FIELD_KINDS[name], columns[index]
        if kind in "CE":
            continue
        valid, text, stamp = _atomic_column(kind, column, render)
        ok &= valid
        if text is not None:
            texts[name] = text
        if stamp is not None:
            stamps[name] = stamp
    if minimum is not None:
        seconds, nanos = divmod(minimum, NANOS)
        for name in MINIMUM_TIMESTAMP_FIELDS:
            stamp = stamps[name]
            early = stamp.present & ((stamp.seconds < seconds) | ((stamp.seconds == seconds) & (stamp.nanos < nanos)))
            ok &= ~early
    return ok, texts, stamps


def _atomic_column(
    kind: str, column: pa.Array, render: bool
) -> tuple[np.ndarray | bool, pa.Array | None, _Timestamps | None]:
    """One atomic column of `kind` (`FIELD_KINDS`): which of its values are in the shapes this path
    takes, with `render` their JSON text, and for a timestamp its parse."""
    if kind in "sS":
        valid = _mask(pc.not_equal(column, "")) if kind == "S" else True
        return valid, _or_null(column, _quoted(column)) if render else None, None
    if kind == "U":
        return _mask(pc.match_substring_regex(column, _UUID)), _quoted(column) if render else None, None
    if kind == "i":
        valid = _mask(pc.or_(pc.equal(column, ""), pc.match_substring_regex(column, _INT)))
        return valid, _or_null(column, column) if render else None, None
    if kind == "b":
        text = pc.if_else(pc.equal(column, "1"), pa.scalar("true"), pc.if_else(pc.equal(column, "0"), "false", "null"))
        return _mask(pc.is_in(column, pa.array(list(_BOOLEANS)))), text if render else None, None
    if kind == "d":
        valid, text = _doubles(column, render)
        return valid, text, None
    stamp = _timestamps(column, kind == "T", render)
    return stamp.ok, stamp.text, stamp


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


def _compact(text: bytes, unstruct: bool, render: bool) -> Pairs | None:
    """A JSON column's entities (key, data text) when its envelope is written as enrichment writes
    it (compact, schema then data, no escape); None for any other text (the decoder then reads it).
    A data is taken as it stands when msgspec, re-encoding it, writes it as it stands (compact, the
    escapes circe writes, numbers as both print them) and it holds no U+007F to U+009F; else it is
    printed from its own parse (`circe`). Without `render` a data is only read whole, its text left
    empty: one msgspec refuses sends the column to the decoder."""
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
            if not render:
                _ANY.decode(raw)  # read whole, so that data msgspec refuses goes to the decoder
                found.append((key, ""))
            elif _C1.search(raw) or _ENCODER.encode(_ANY.decode(raw)) != raw:
                found.append((key, circe.dumps(circe.loads(raw.decode()))))  # numbers as written, escapes
            else:
                found.append((key, raw.decode()))
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return found


def _column(text: bytes | None, unstruct: bool, render: bool) -> Pairs:
    """A JSON column's entities, by `_compact` or else by the decoder (`InvalidValue` if bad);
    without `render`, their keys only (texts empty)."""
    if not text:
        return []
    pairs = _compact(text, unstruct, render)
    if pairs is not None:
        return pairs
    found = entities(text.decode(), unstruct)
    listed = found if isinstance(found, list) else [found]
    return widerow.texts(listed) if render else [(key, "") for key, _ in listed]


Part = tuple[dict[str, str], list[str]]
"""A JSON column's share of a line: its entity columns (their JSON) and its entity types."""


def _part(text: bytes | None, unstruct: bool, render: bool) -> Part:
    """A JSON column's part of its line (`InvalidValue` if the decoder refuses it); without
    `render`, its types alone."""
    pairs = _column(text, unstruct, render)
    types = [type_text(key.uri, widerow.SELF_DESCRIBING_EVENT if unstruct else widerow.CONTEXT) for key, _ in pairs]
    if not render:
        return {}, types
    if unstruct:
        return widerow.unstruct_column(pairs[0] if pairs else None), types
    return widerow.context_columns(pairs), types


def entity_parts(
    columns: list[pa.Array], ok: np.ndarray, *, render: bool = True
) -> tuple[list[dict[str, str] | None], list[list[str]]]:
    """Each taken line's entity columns (their JSON, with `render`: only wide-row JSON writes them)
    and entity types (`ENTITY URI`), from its three JSON fields (each distinct text read once a
    batch: derived contexts and events repeat); a line whose JSON the decoder refuses is not taken
    (`ok` cleared)."""
    contexts, unstruct, derived = (
        columns[i].cast(pa.binary()).to_pylist() for i in (CONTEXTS, UNSTRUCT_EVENT, DERIVED_CONTEXTS)
    )
    extras: list[dict[str, str] | None] = [None] * len(ok)
    types: list[list[str]] = [[] for _ in range(len(ok))]
    read: dict[tuple[bytes | None, bool], Part | None] = {}
    for i in np.flatnonzero(ok).tolist():
        parts = []
        for text, is_unstruct in ((contexts[i], False), (derived[i], False), (unstruct[i], True)):
            key = (text, is_unstruct)
            if key not in read:
                try:
                    read[key] = _part(text, is_unstruct, render)
                except InvalidValue:
                    read[key] = None
            parts.append(read[key])
        if None in parts:
            ok[i] = False
            continue
        (context_columns, context_types), (derived_columns, derived_types), (event_column, event_types) = parts  # type: ignore[misc]
        extras[i] = widerow.merged(context_columns, derived_columns, event_column)
        types[i] = context_types + derived_types + event_types
    return extras, types


@functools.lru_cache(maxsize=4096)
def _layout(names: tuple[str, ...]) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Where a line's other keys go (`widerow.place`): after which atomic key, in which order."""
    gaps: dict[int, list[tuple[tuple[int, ...], str]]] = {}
    for name in names:
        gap, path = widerow.place(name)
        gaps.setdefault(gap, []).append((path, name))
    return tuple((gap, tuple(name for _, name in sorted(found))) for gap, found in sorted(gaps.items()))


def lines(texts: dict[str, pa.Array], extras: list[dict[str, str] | None], rows: np.ndarray) -> pa.Array:
    """The wide-row JSON lines of `rows`. The reference's key order is one order of all keys
    (`widerow.place`), so the atomic keys keep theirs whatever the entity columns: the atomic runs
    between the places where this batch's entity columns fall are joined once for the whole batch,
    and each line's entity columns, grouped by place, are joined in between."""
    count = len(texts[widerow.ATOMIC_NAMES[0]])
    latitude, longitude = texts["geo_latitude"], texts["geo_longitude"]
    located = _mask(pc.and_(pc.not_equal(latitude, "null"), pc.not_equal(longitude, "null")))
    geo = pc.binary_join_element_wise('"', latitude, ",", longitude, '"', "").to_pylist() if located.any() else []
    inserted: dict[int, list[str]] = {}
    for row in rows.tolist():
        extra = extras[row]
        assert extra is not None
        found = {**extra, widerow.GEO_LOCATION: geo[row]} if located[row] else extra
        for gap, names in _layout(tuple(found)):
            column = inserted.get(gap)
            if column is None:
                column = inserted[gap] = [""] * count
            column[row] = "".join([f',"{name}":{found[name]}' for name in names])
    order = widerow.ATOMIC_ORDER
    parts: list[Any] = []
    bounds = [0, *sorted(inserted), len(order)]
    for start, end in itertools.pairwise(bounds):
        for name in order[start:end]:
            parts += [f',"{name}":', texts[name]]
        if end in inserted:
            parts.append(pa.array(inserted[end], pa.string()))
    joined = pc.binary_join_element_wise(*parts, "")
    line = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(joined, 1), "}", "")
    return line if len(rows) == count else line.take(pa.array(rows, pa.int64()))


def events(text: pa.Array) -> list[Event | None]:
    """Each line's `Event` as `event.decode` gives it (without truncation), built column by column
    for the lines in the shapes enrichers write; None for the others, which the caller decodes."""
    return decoded(text, tsv=False)[0]


def decoded(text: pa.Array, *, tsv: bool) -> tuple[list[Event | None], list[str | None]]:
    """`events`, and with `tsv` each of their atomic TSV lines as shred mode writes them
    (`shred_mode.atomic_line`; None where the event is)."""
    wide, columns = fields(text, json=False)
    ok, _, stamps = atomic_columns(columns, None, render=False)
    return decoded_columns(len(text), wide, columns, ok, stamps, tsv=tsv)


def decoded_columns(
    size: int,
    wide: np.ndarray,
    columns: list[pa.Array],
    ok: np.ndarray,
    stamps: dict[str, _Timestamps],
    *,
    tsv: bool,
) -> tuple[list[Event | None], list[str | None]]:
    """`decoded` of a batch of `size` lines already split (`fields`) and checked
    (`atomic_columns`): the events of its `ok` rows."""
    lines: list[str | None] = []
    if tsv:
        lines = [None] * size
        taken = atomic_tsv(columns, stamps).to_pylist()
        for row, position in enumerate(np.flatnonzero(wide).tolist()):
            lines[position] = taken[row]
    count = len(ok)
    by_field: list[list[Any]] = []
    for index, name in enumerate(FIELD_NAMES):
        kind = FIELD_KINDS[name]
        if kind in "CE":
            by_field.append([None] * count)
        elif kind in "tT":
            stamp = stamps[name]
            by_field.append(
                [
                    seconds * NANOS + nanos if present else None
                    for seconds, nanos, present in zip(
                        stamp.seconds.tolist(), stamp.nanos.tolist(), stamp.present.tolist(), strict=True
                    )
                ]
            )
        else:
            by_field.append(_decoded(kind, columns[index], ok).to_pylist())
    found: list[Event | None] = [None] * size
    positions = np.flatnonzero(wide).tolist()
    for row, (values, parts) in enumerate(zip(zip(*by_field, strict=True), _entities(columns, ok), strict=True)):
        if parts is not None:
            event_contexts, event_unstruct, event_derived = parts
            found[positions[row]] = Event(list(values), event_contexts, event_unstruct, event_derived)
    return found, [line if event is not None else None for line, event in zip(lines, found, strict=True)] if tsv else []


def _decoded(kind: str, column: pa.Array, ok: np.ndarray) -> pa.Array:
    """A text, int, double or boolean field's values as the decoder reads them (`Event.values`),
    where `ok`: a text as it is (empty: null, but for a UUID), an int64, a float64, a bool."""
    if kind in "sS":
        return pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
    if kind == "U":
        return column
    if kind == "b":
        return pc.if_else(pc.equal(column, "1"), True, pc.if_else(pc.equal(column, "0"), False, None))
    present = pa.array(ok & _mask(pc.not_equal(column, "")))
    return pc.cast(
        pc.if_else(present, column, pa.scalar(None, pa.string())), pa.int64() if kind == "i" else pa.float64()
    )


EventEntities = tuple[list[Entity], Entity | None, list[Entity]]
"""A line's contexts, unstruct event and derived contexts."""


def _entities(columns: list[pa.Array], ok: np.ndarray) -> list[EventEntities | None]:
    """The entities of each `ok` line, None where the decoder refuses one of its JSON columns (and
    on other lines); each distinct text read once (derived contexts and events repeat). The
    entities, never changed, are shared between lines; each line has lists of its own."""
    read = functools.cache(_entities_or_error)
    found: list[EventEntities | None] = []
    texts = (columns[i].to_pylist() for i in (CONTEXTS, UNSTRUCT_EVENT, DERIVED_CONTEXTS))
    for row, (contexts, unstruct, derived) in enumerate(zip(*texts, strict=True)):
        if not ok[row]:
            found.append(None)
            continue
        parts = [
            read(text, is_unstruct) if text else None
            for text, is_unstruct in ((contexts, False), (unstruct, True), (derived, False))
        ]
        if any(isinstance(part, InvalidValue) for part in parts):
            found.append(None)
            continue
        event_contexts, event_unstruct, event_derived = parts
        assert isinstance(event_contexts, list | None) and isinstance(event_derived, list | None)
        assert event_unstruct is None or isinstance(event_unstruct, Entity)
        found.append((list(event_contexts or []), event_unstruct, list(event_derived or [])))
    return found


def kept_values(text: pa.Array) -> tuple[np.ndarray, dict[str, pa.Array], list[Entities]]:
    """For Parquet rows (`ParquetColumns.rows_of`), the lines in the shapes this path takes (a
    mask), their atomic fields' values column by column (`parquet.AtomicValues`) and their
    entities: no event is built."""
    wide, columns = fields(text, json=False)
    ok, _, stamps = atomic_columns(columns, None, render=False)
    read = _entities(columns, ok)
    ok &= np.array([parts is not None for parts in read], dtype=bool)
    rows = np.flatnonzero(ok)
    every = len(rows) == len(ok)  # the usual batch: nothing to gather
    pick = slice(None) if every else rows
    at = pa.array(rows, pa.int64())
    values: dict[str, pa.Array] = {}
    for index, name in enumerate(FIELD_NAMES):
        kind = FIELD_KINDS[name]
        if kind in "tT":
            stamp = stamps[name]
            micros = stamp.seconds[pick] * 1_000_000 + stamp.nanos[pick] // 1000
            values[name] = pa.array(micros, pa.int64(), mask=~stamp.present[pick])
        elif kind not in "CE":
            decoded = _decoded(kind, columns[index], ok)
            values[name] = decoded if every else decoded.take(at)
    taken = np.zeros(len(text), dtype=bool)
    taken[np.flatnonzero(wide)[rows]] = True
    return taken, values, [(contexts + derived, event) for contexts, event, derived in filter(None, read)]


def _entities_or_error(text: str, unstruct: bool) -> list[Entity] | Entity | InvalidValue:
    """`event.entities` of a JSON column, or the error it raises (so that a cache holds it too)."""
    try:
        return entities(text, unstruct)
    except InvalidValue as e:
        return e


def atomic_tsv(columns: list[pa.Array], stamps: dict[str, _Timestamps]) -> pa.Array:
    """The atomic fields of lines in the shapes this path takes, as shred mode's TSV line: each
    value as written, but a timestamp as `yyyy-MM-dd HH:mm:ss.SSS` (its year 0 as 1, the era's) and
    a double as Java prints it."""
    cells = []
    for index, name in enumerate(FIELD_NAMES):
        kind, column = FIELD_KINDS[name], columns[index]
        if kind in "CE":
            continue
        if kind == "d":
            text = _doubles(column, True)[1]
            assert text is not None
            cells.append(pc.if_else(pc.equal(column, ""), pa.scalar(""), text))
        elif kind in "tT":
            fraction = pc.utf8_slice_codeunits(pc.utf8_rpad(pc.utf8_slice_codeunits(column, 20, 23), 3, "0"), 0, 3)
            date = pc.replace_substring_regex(pc.utf8_slice_codeunits(column, 0, 10), "^0000", "0001")
            written = pc.binary_join_element_wise(date, " ", pc.utf8_slice_codeunits(column, 11, 19), ".", fraction, "")
            cells.append(pc.if_else(pa.array(stamps[name].present), written, pa.scalar("")))
        else:
            cells.append(column)
    return pc.binary_join_element_wise(*cells, "\t")
