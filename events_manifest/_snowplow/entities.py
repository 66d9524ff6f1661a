"""Self-describing JSON columns of enriched events: validation and entity extraction.

Pure Python, no Spark: the shred job calls it once per Arrow batch. The `data` of every entity is
written compact, as the reference's JSON library writes it (`compact`): no whitespace, keys in
their order, strings escaped only where JSON needs it, numbers as written.

Two readers with one meaning: `compact_entities` (msgspec, in C) takes the form enrichment writes,
and hands anything else to `entities_of`, the general walker that also words the errors.
`read_rows` runs them over a whole batch and returns flat columns, ready for Arrow.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

import msgspec

from events_manifest._iglu.keys import parse_parts
from events_manifest._snowplow import legacy_bad_rows
from events_manifest.model import unicode_text

CONTEXTS_SCHEMA = re.compile(r"iglu:com\.snowplowanalytics\.snowplow/contexts/jsonschema/1-0-(?:0|[1-9][0-9]*)")
UNSTRUCT_SCHEMA = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
MAX_SCHEMA_PARTS = 255 - len("type=") - 3 * len("%2F")
"""The most characters an Iglu URI's vendor, name, format and version may hold together: the
write stages each type in one folder `type=VENDOR%2FNAME%2FFORMAT%2FVERSION`, and a folder name
holds at most 255 bytes on every common file system. A longer one makes its event a bad row."""
_WS = re.compile(r"[ \t\n\r]*")
_STRING_OR_SPACE = re.compile(r'("(?:[^"\\]|\\.)*")|[ \t\n\r]+')
"""A JSON string (group 1), or whitespace between tokens."""


def compact(text: str) -> str:
    """Valid JSON `text` as the reference re-serialises an entity: whitespace between tokens
    dropped, strings escaped only where JSON needs it (`"`, `\\`, control characters; `\\u00e9`
    becomes `é`, `\\/` becomes `/`). Numbers keep their text: the reference's rendering of
    numbers (`1e2` as `100.0`) is its library's own."""
    return _STRING_OR_SPACE.sub(_unescaped if "\\" in text else r"\1", text)


def may_need_compacting(raw: bytes) -> bool:
    """Whether UTF-8 JSON may differ from its `compact` form (a space or an escape somewhere)."""
    return len(raw.translate(None, b" \t\n\r\\")) != len(raw)  # one pass in C


def _unescaped(match: re.Match[str]) -> str:
    found = match.group(1)
    if found is None:
        return ""
    if "\\" not in found:
        return found
    written = json.dumps(json.loads(found), ensure_ascii=False)
    return written if unicode_text(written) else found  # half a character: kept escaped


class Entity(NamedTuple):
    """One self-describing entity: its schema's parts and its `data`, compact (`compact`).

    A named tuple, not an attrs class: millions are made per batch and unpacked into columns.
    """

    vendor: str
    name: str
    format: str
    version: str
    data: str


class InvalidJson(ValueError):
    """A JSON column is not valid JSON (`syntax`), or not of the self-describing shape its field needs."""

    def __init__(self, reason: str, *, syntax: bool = False) -> None:
        super().__init__(reason)
        self.syntax = syntax


def _not_a_number(constant: str) -> float:
    raise InvalidJson(f"{constant} is not a JSON value", syntax=True)


_DECODER = json.JSONDecoder(parse_constant=_not_a_number)
"""Strict JSON: NaN, Infinity and -Infinity are not numbers (Python's json takes them by default)."""


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _value(text: str, pos: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as e:
        raise InvalidJson(f"{e.msg} at character {e.pos}", syntax=True) from None
    except RecursionError:
        raise InvalidJson(f"nested too deeply at character {pos}", syntax=True) from None


def _members(text: str, pos: int, where: str) -> tuple[dict[str, tuple[int, int]], int]:
    """The raw spans of an object's members, starting at `pos`; returns them and the end position."""
    pos = _skip(text, pos)
    if text[pos : pos + 1] != "{":
        raise InvalidJson(f"{where} must be a JSON object")
    spans: dict[str, tuple[int, int]] = {}
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return spans, pos + 1
    while True:
        if text[pos : pos + 1] != '"':
            raise InvalidJson(f"Expecting property name enclosed in double quotes at character {pos}", syntax=True)
        try:
            key, pos = scanstring(text, pos + 1)
        except json.JSONDecodeError as e:
            raise InvalidJson(f"{e.msg} at character {e.pos}", syntax=True) from None
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise InvalidJson(f"Expecting ':' delimiter at character {pos}", syntax=True)
        start = _skip(text, pos + 1)
        _, end = _value(text, start)
        if key in spans:
            raise InvalidJson(f"{where} has the property [{key}] twice")
        spans[key] = (start, end)
        pos = _skip(text, end)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
        elif text[pos : pos + 1] == "}":
            return spans, pos + 1
        else:
            raise InvalidJson(f"Expecting ',' delimiter at character {pos}", syntax=True)


def _envelope(text: str, pos: int, where: str) -> tuple[str, tuple[int, int], int]:
    """A self-describing JSON at `pos`: its schema URI, the span of its data, its end position.

    Enrichment writes compact JSON with `schema` first: that form is read in a few C calls;
    anything else (whitespace, other key order, errors) goes through the general walker.
    """
    if text.startswith('{"schema":"', pos):
        try:
            schema, after = scanstring(text, pos + 11)
        except json.JSONDecodeError:
            pass
        else:
            if text.startswith(',"data":', after):
                start = after + 8
                _, stop = _value(text, start)
                if text.startswith("}", stop):
                    return schema, (start, stop), stop + 1
    return _general_envelope(text, pos, where)


def _general_envelope(text: str, pos: int, where: str) -> tuple[str, tuple[int, int], int]:
    spans, end = _members(text, pos, where)
    if set(spans) != {"schema", "data"}:
        found = ", ".join(sorted(spans)) or "none"
        raise InvalidJson(f"{where} must have exactly the properties schema and data (found {found})")
    start, stop = spans["schema"]
    schema = json.loads(text[start:stop])
    if not isinstance(schema, str):
        raise InvalidJson(f"{where}: schema must be a string")
    return schema, spans["data"], end


def _entity(text: str, pos: int, where: str) -> tuple[Entity, int]:
    schema, (start, stop), end = _envelope(text, pos, where)
    parts = parse_parts(schema)
    if parts is None:
        raise InvalidJson(f"{where}: schema [{schema}] is not an Iglu URI iglu:vendor/name/format/M-R-A")
    if not fits_a_folder(parts):
        raise InvalidJson(
            f"{where}: schema [{schema}] is too long to be written as a folder name (vendor, name, format "
            f"and version hold {MAX_SCHEMA_PARTS} characters at most)"
        )
    if text[start] != "{":
        raise InvalidJson(f"{where}: data of [{schema}] must be a JSON object")
    return Entity(*parts, compact(text[start:stop])), end


def _whole(text: str, end: int) -> None:
    if _skip(text, end) != len(text):
        raise InvalidJson(f"Extra data at character {_skip(text, end)}", syntax=True)


def parse_contexts(text: str) -> list[Entity]:
    """The entities of a `contexts` or `derived_contexts` column."""
    return _compact_contexts(text) or _general_contexts(text)


def _compact_contexts(text: str) -> list[Entity] | None:
    """Enrichment's compact form, each element parsed once; None for anything else (or empty)."""
    if not text.startswith('{"schema":"'):
        return None
    try:
        schema, pos = scanstring(text, 11)
    except json.JSONDecodeError:
        return None
    if not (text.startswith(',"data":[{', pos) and CONTEXTS_SCHEMA.fullmatch(schema)):
        return None
    pos += 9
    entities: list[Entity] = []
    while True:
        try:
            entity, pos = _entity(text, pos, f"context {len(entities)}")
        except InvalidJson:
            return None  # the general walker gives the message
        entities.append(entity)
        if text.startswith(",{", pos):
            pos += 1
        elif text.startswith("]}", pos) and pos + 2 == len(text):
            return entities
        else:
            return None


def _general_contexts(text: str) -> list[Entity]:
    schema, (start, _), end = _envelope(text, 0, "the value")
    _whole(text, end)
    if not CONTEXTS_SCHEMA.fullmatch(schema):
        raise InvalidJson(f"schema [{schema}] is not iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-x")
    if text[start] != "[":
        raise InvalidJson("data must be an array of self-describing JSONs")
    entities: list[Entity] = []
    pos = _skip(text, start + 1)
    if text[pos] == "]":
        return entities
    while True:
        entity, pos = _entity(text, pos, f"context {len(entities)}")
        entities.append(entity)
        pos = _skip(text, pos)
        if text[pos] == "]":
            return entities
        pos = _skip(text, pos + 1)  # the ',' (the array is valid JSON: raw_decode checked it)


def parse_unstruct(text: str) -> list[Entity]:
    """The one entity of an `unstruct_event` column."""
    schema, (start, _), end = _envelope(text, 0, "the value")
    _whole(text, end)
    if schema != UNSTRUCT_SCHEMA:
        raise InvalidJson(f"schema [{schema}] is not {UNSTRUCT_SCHEMA}")
    entity, _ = _entity(text, start, "data")
    return [entity]


def entities_of(contexts: str | None, unstruct: str | None, derived: str | None) -> tuple[list[Entity], list[str]]:
    """All entities of an event's three JSON columns, and one message per invalid column: the
    unstruct event's first, then the contexts', then the derived contexts', as the reference
    reads them (and the entities in the same order)."""
    entities: list[Entity] = []
    errors: list[str] = []
    columns = (
        ("unstruct_event", parse_unstruct, unstruct),
        ("contexts", parse_contexts, contexts),
        ("derived_contexts", parse_contexts, derived),
    )
    for field, parse, text in columns:
        if not text:
            continue
        try:
            _DECODER.decode(text)  # strict JSON first: a shape message only for what is JSON
            entities += parse(text)
        except InvalidJson as e:
            errors.append(
                (legacy_bad_rows.invalid_json if e.syntax else legacy_bad_rows.not_self_describing)(field, text, str(e))
            )
        except json.JSONDecodeError as e:
            errors.append(legacy_bad_rows.invalid_json(field, text, f"{e.msg} at character {e.pos}"))
        except RecursionError:
            errors.append(legacy_bad_rows.invalid_json(field, text, "nested too deeply"))
    return entities, errors


class _Sdj(msgspec.Struct, forbid_unknown_fields=True):
    schema: str
    data: msgspec.Raw


class _Contexts(msgspec.Struct, forbid_unknown_fields=True):
    schema: str
    data: list[_Sdj]


class _Unstruct(msgspec.Struct, forbid_unknown_fields=True):
    schema: str
    data: _Sdj


_CONTEXTS_DECODER = msgspec.json.Decoder(_Contexts)
_UNSTRUCT_DECODER = msgspec.json.Decoder(_Unstruct)
_ENCODER = msgspec.json.Encoder()


IgluParts = tuple[str, str, str, str]
Row = tuple[bytes | None, bytes | None, bytes | None]
"""A row's contexts, unstruct_event and derived_contexts, as UTF-8 (None or empty when absent)."""


@functools.lru_cache(maxsize=4096)  # a batch has few distinct schemas; bounded whatever the input holds
def _iglu_parts(schema: str) -> IgluParts | None:
    parts = parse_parts(schema)
    return parts if parts is not None and fits_a_folder(parts) else None


def fits_a_folder(parts: IgluParts) -> bool:
    """Whether an Iglu URI's type can be a folder name (see `MAX_SCHEMA_PARTS`)."""
    return sum(map(len, parts)) <= MAX_SCHEMA_PARTS


@functools.lru_cache(maxsize=4096)
def _is_contexts_schema(schema: str) -> bool:
    return CONTEXTS_SCHEMA.fullmatch(schema) is not None


def _read_sdjs(sdjs: Sequence[_Sdj], parts: list[IgluParts], data: list[bytes], compacting: bool) -> bool:
    """Append each entity's parts and data (`compact` where `compacting`: its column may need it)."""
    for sdj in sdjs:
        iglu = _iglu_parts(sdj.schema)
        raw = bytes(sdj.data)
        if iglu is None or raw[:1] != b"{":
            return False
        if not raw.isascii():
            raw.decode()  # msgspec does not check the UTF-8 of a raw value: a UnicodeDecodeError here
        if compacting and may_need_compacting(raw):
            raw = compact(raw.decode()).encode()
        parts.append(iglu)
        data.append(raw)
    return True


def _read_column(text: bytes, unstruct: bool, parts: list[IgluParts], data: list[bytes]) -> bool:
    envelope: _Contexts | _Unstruct
    compacting = may_need_compacting(text)  # once per column: most hold neither a space nor an escape
    if unstruct:
        envelope = _UNSTRUCT_DECODER.decode(text)
        ok = envelope.schema == UNSTRUCT_SCHEMA and _read_sdjs((envelope.data,), parts, data, compacting)
    else:
        envelope = _CONTEXTS_DECODER.decode(text)
        ok = _is_contexts_schema(envelope.schema) and _read_sdjs(envelope.data, parts, data, compacting)
    return ok and _ENCODER.encode(envelope) == text


def _compact_into(row: Row, parts: list[IgluParts], data: list[bytes]) -> bool:
    """Append the entities of a row in enrichment's compact form to `parts` and `data`; False
    (and nothing appended) for any other row."""
    mark = len(data)
    contexts, unstruct, derived = row
    try:
        if (
            (not unstruct or _read_column(unstruct, True, parts, data))
            and (not contexts or _read_column(contexts, False, parts, data))
            and (not derived or _read_column(derived, False, parts, data))
        ):
            return True
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        pass
    del parts[mark:], data[mark:]
    return False


def compact_entities(contexts: bytes | None, unstruct: bytes | None, derived: bytes | None) -> list[Entity] | None:
    """All entities of a row whose JSON columns are valid and in enrichment's compact form, in a
    few C calls; None for any other row (a space, another key order, an error), which
    `entities_of` then reads. Where both read a row, they find the same entities.

    Re-encoding what msgspec decoded gives the text back only if it was compact, schema first,
    with no escape in a schema and no repeated property: then each `data`, compacted, is what the
    walker finds.
    """
    parts: list[IgluParts] = []
    data: list[bytes] = []
    if not _compact_into((contexts, unstruct, derived), parts, data):
        return None
    return [Entity(*iglu, raw.decode()) for iglu, raw in zip(parts, data, strict=True)]


class Found(NamedTuple):
    """The entities and errors of a batch of rows, column by column: each entity's Iglu parts and
    `data` (UTF-8); the rows up to i hold `entity_ends[i]` entities and `error_ends[i]` errors."""

    parts: list[IgluParts]
    data: list[bytes]
    entity_ends: list[int]
    errors: list[str]
    error_ends: list[int]


def read_rows(
    contexts: Sequence[bytes | None], unstruct: Sequence[bytes | None], derived: Sequence[bytes | None]
) -> Found:
    """`compact_entities` for each row of a batch, `entities_of` for the rows it does not take."""
    found = Found([], [], [], [], [])
    for row in zip(contexts, unstruct, derived, strict=True):
        if not _compact_into(row, found.parts, found.data):
            entities, errors = entities_of(*(None if text is None else text.decode("utf-8", "replace") for text in row))
            found.parts.extend(entity[:4] for entity in entities)
            found.data.extend(entity.data.encode() for entity in entities)
            found.errors.extend(errors)
        found.entity_ends.append(len(found.data))
        found.error_ends.append(len(found.errors))
    return found
