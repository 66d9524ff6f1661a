"""An event as the transformer's wide-row JSON line: the 128 atomic keys (null when absent), one key
per entity column, `geo_location`; values rendered as the JVM renders them, keys in the order of
the reference's hash map (`jvm.hash_map_order`)."""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any

from events_manifest._iglu.keys import SchemaKey
from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_KINDS, FIELD_NAMES
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import Entity, Event
from events_manifest._transformer.decode.jvm import (
    double_to_string,
    hash_map_order,
    instant_to_string,
    java_double,
    trie_path,
)

ATOMIC_NAMES = tuple(FIELD_NAMES[i] for i in ATOMIC_FIELDS)
_CAMEL = re.compile(r"([^A-Z_])([A-Z])")
CONTEXT, SELF_DESCRIBING_EVENT = "CONTEXT", "SELF_DESCRIBING_EVENT"
GEO_LOCATION = "geo_location"


@functools.lru_cache(maxsize=4096)
def column_name(key: SchemaKey, entity: str) -> str:
    """`contexts_VENDOR_NAME_MODEL` or `unstruct_event_VENDOR_NAME_MODEL`, as the reference names
    entity columns: `.` and `-` as `_`, camel case split, lower case."""
    vendor = key.vendor.replace(".", "_").replace("-", "_").lower()
    name = _CAMEL.sub(r"\1_\2", key.name.replace(".", "_").replace("-", "_")).lower()
    prefix = "unstruct_event_" if entity == SELF_DESCRIBING_EVENT else "contexts_"
    return f"{prefix}{vendor}_{name}_{key.model}"


def atomic_value(kind: str, value: Any) -> str:
    """An atomic field's value as JSON text."""
    if value is None:
        return "null"
    if kind in "sSU":
        return circe.string(value)
    if kind in "tT":
        return '"' + instant_to_string(value) + '"'
    if kind == "d":
        text = double_to_string(value)
        return "null" if text is None else text
    if kind == "b":
        return "true" if value else "false"
    return str(value)


_KINDS = tuple(FIELD_KINDS[name] for name in ATOMIC_NAMES)


Texts = list[tuple[SchemaKey, str]]
"""Entities as their schema key and their data's JSON text (as circe prints it)."""


def texts(entities: list[Entity]) -> Texts:
    return [(key, circe.dumps(data)) for key, data in entities]


def context_columns(entities: Texts) -> dict[str, str]:
    """Each context column's array: the data of the list's entities of one vendor, name, format and
    model, in order; where two such groups get one column name, the later group's."""
    groups: dict[tuple[str, str, str, int], list[str]] = {}
    for key, data in entities:
        groups.setdefault((key.vendor, key.name, key.format, key.model), []).append(data)
    return {_context_name(*group): "[" + ",".join(data) + "]" for group, data in groups.items()}


@functools.lru_cache(maxsize=4096)
def _context_name(vendor: str, name: str, fmt: str, model: int) -> str:
    return column_name(SchemaKey(vendor, name, fmt, f"{model}-0-0"), CONTEXT)


ATOMIC_ORDER = tuple(hash_map_order(ATOMIC_NAMES))
"""The atomic keys in the reference's order: the same in every line, whatever its entity columns."""
_ATOMIC_PATHS = [trie_path(name) for name in ATOMIC_ORDER]


@functools.lru_cache(maxsize=4096)
def place(key: str) -> tuple[int, tuple[int, ...]]:
    """Where a key other than an atomic one goes in a line: after how many of `ATOMIC_ORDER` (the
    atomic keys first between equals, as `key_order` places them), and its rank among the others."""
    path = trie_path(key)
    return bisect.bisect_right(_ATOMIC_PATHS, path), path


@functools.lru_cache(maxsize=1024)
def key_order(extra: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of a line with these extra columns (sorted), in the reference's order."""
    return tuple(hash_map_order((*ATOMIC_NAMES, *extra)))


def entity_columns(contexts: Texts, derived: Texts, unstruct: tuple[SchemaKey, str] | None) -> dict[str, str]:
    """An event's entity columns and their JSON."""
    return merged(context_columns(contexts), context_columns(derived), unstruct_column(unstruct))


def merged(contexts: dict[str, str], derived: dict[str, str], unstruct: dict[str, str]) -> dict[str, str]:
    """The entity columns of a line from its three JSON fields': derived contexts replace contexts
    of the same column."""
    return {**contexts, **derived, **unstruct}


def unstruct_column(unstruct: tuple[SchemaKey, str] | None) -> dict[str, str]:
    return {} if unstruct is None else {column_name(unstruct[0], SELF_DESCRIBING_EVENT): unstruct[1]}


def line(event: Event) -> str:
    """The event's wide-row JSON line."""
    values = {name: atomic_value(kind, event.get(name)) for name, kind in zip(ATOMIC_NAMES, _KINDS, strict=True)}
    unstruct = None if event.unstruct is None else (event.unstruct.key, circe.dumps(event.unstruct.data))
    extra = entity_columns(texts(event.contexts), texts(event.derived), unstruct)
    latitude, longitude = event.get("geo_latitude"), event.get("geo_longitude")
    if latitude is not None and longitude is not None:
        extra[GEO_LOCATION] = circe.string(f"{java_double(latitude)},{java_double(longitude)}")
    values.update(extra)
    return "{" + ",".join(f'"{key}":{values[key]}' for key in key_order(tuple(sorted(extra)))) + "}"


def types(event: Event) -> list[tuple[str, str]]:
    """The event's entity types for the run's message: (schema key, CONTEXT or SELF_DESCRIBING_EVENT)."""
    unstruct = None if event.unstruct is None else event.unstruct.key
    return entity_types([e.key for e in event.contexts], [e.key for e in event.derived], unstruct)


def entity_types(
    contexts: list[SchemaKey], derived: list[SchemaKey], unstruct: SchemaKey | None
) -> list[tuple[str, str]]:
    """`types` from the entities' keys."""
    found = [(key.uri, CONTEXT) for key in (*contexts, *derived)]
    if unstruct is not None:
        found.append((unstruct.uri, SELF_DESCRIBING_EVENT))
    return found
