"""The transformer's shred mode (docs/transformer.md, shred mode): each good event as an atomic TSV
line and one line per entity, TSV with columns from the entity's JSON Schema or JSON with its
hierarchy, each under the partition of its schema key.

Plain Python over decoded events and schemas: the routing of an entity to TSV or JSON, the TSV
columns of a schema (`tsv_columns`), the cells, the walk over a model's versions that must all be
fetchable (`model_schema`), and `ShredModeLines`, which turns one event into its lines or its
`loader_iglu_error`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from events_manifest._iglu.keys import SchemaKey
from events_manifest._iglu.resolver import ResolverConfig, resolver_for
from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_KINDS, FIELD_NAMES
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import Entity, Event
from events_manifest._transformer.decode.jvm import date_time_millis, double_to_string, instant_to_string
from events_manifest._transformer.output.formats import JSON, TSV, Routing
from events_manifest._transformer.output.schemas import parseable, schema_types
from events_manifest._transformer.output.widerow import CONTEXT, SELF_DESCRIBING_EVENT

PARTITIONS = ("vendor", "name", "format", "model", "revision", "addition")
"""The partition folders of a line under `output=good/` or `output=bad/`."""
ATOMIC_PARTITION = ("com.snowplowanalytics.snowplow", "atomic", "tsv", "1", "0", "0")
NULL = "\\N"


@functools.lru_cache(maxsize=4096)
def partition(key: SchemaKey, fmt: str) -> tuple[str, str, str, str, str, str]:
    return (key.vendor, key.name, fmt.lower(), str(key.model), str(key.revision), str(key.addition))


tsv_tstamp = date_time_millis
"""How shredded lines write timestamps: `yyyy-MM-dd HH:mm:ss.SSS`."""


def _atomic_cell(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind in "tT":
        return tsv_tstamp(value)
    if kind == "d":
        return double_to_string(value) or ""
    if kind == "b":
        return "1" if value else "0"
    return str(value)


_ATOMIC = tuple((i, FIELD_KINDS[FIELD_NAMES[i]]) for i in ATOMIC_FIELDS)


def atomic_line(event: Event) -> str:
    """The 128 atomic fields, TAB-separated, as the reference writes them."""
    return "\t".join(_atomic_cell(kind, event.values[i]) for i, kind in _ATOMIC)


_UPPER_RUN = re.compile(r"([A-Z]+)([A-Z][a-z])")
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """A property name as a TSV column segment: camel case split, `-` as `_`, lower case."""
    return _LOWER_UPPER.sub(r"\1_\2", _UPPER_RUN.sub(r"\1_\2", name)).replace("-", "_").lower()


class Column(NamedTuple):
    """A TSV column: its name, the path of property names to its value, whether it may be null."""

    name: str
    path: tuple[str, ...]
    nullable: bool


def _types(schema: Mapping[str, Any]) -> set[str]:
    return schema_types(schema) or set()


def _heterogeneous(schema: Mapping[str, Any]) -> bool:
    """A union whose values may be of several kinds: no `type`, several non-null types other than
    exactly number and integer, or `oneOf` alternatives of several non-null types."""
    if "type" not in schema:
        return True
    kinds = {t for t in _types(schema) if t != "null"}
    if len(kinds) >= 2 and kinds != {"number", "integer"}:
        return True
    alternatives = schema.get("oneOf")
    if isinstance(alternatives, list):
        found = {t for alt in alternatives if isinstance(alt, dict) for t in _types(alt) if t != "null"}
        return len(found) > 1
    return False


def _nullable(schema: Mapping[str, Any], required: bool) -> bool:
    enum = schema.get("enum")
    return not required or "null" in _types(schema) or (isinstance(enum, list) and None in enum)


def tsv_columns(schema: Mapping[str, Any]) -> tuple[Column, ...]:
    """The TSV columns of an entity's schema: its properties flattened (objects with properties
    into their children, anything else one column), non-nullable columns first, each group by
    name."""
    columns: list[Column] = []

    def walk(node: Mapping[str, Any], path: tuple[str, ...], nullable: bool) -> None:
        properties = node.get("properties")
        if "object" in _types(node) and isinstance(properties, dict) and not _heterogeneous(node):
            listed = node.get("required")
            required = listed if isinstance(listed, list) else []
            for name, child in properties.items():
                if isinstance(child, dict):
                    walk(child, (*path, name), nullable or _nullable(child, name in required))
        elif path:
            columns.append(Column(".".join(map(snake, path)), path, nullable))

    root_properties = schema.get("properties")
    if isinstance(root_properties, dict) and root_properties:
        walk({**schema, "type": schema.get("type", "object")}, (), False)
    java_order = lambda column: (column.nullable, column.name.encode("utf-16-be"))  # noqa: E731
    return tuple(sorted(columns, key=java_order))


_CELL_SPACES = str.maketrans({"\t": " ", "\n": " "})


def cell(data: Any, path: Sequence[str]) -> str:
    """A TSV cell: the value at `path` in the entity's data."""
    value = data
    for name in path:
        value = value.get(name) if isinstance(value, dict) else None
        if value is None:
            return NULL
    if value is True or value is False:
        return "1" if value else "0"
    if isinstance(value, circe.Number):
        return str(value)
    if isinstance(value, str):
        return "\\\\N" if value == NULL else value.translate(_CELL_SPACES)
    return circe.dumps(value).translate(_CELL_SPACES)


class IgluFailure(NamedTuple):
    """Why an entity has no TSV columns: the first version of its model that was `missing` from
    every repository (listed) or could not be read as a JSON Schema."""

    uri: str
    repositories: tuple[str, ...] = ()

    def item(self, now: int) -> dict[str, Any]:
        """The failure as a `loader_iglu_error` lists it, its lookups dated `now` (nanoseconds)."""
        if not self.repositories:
            return {"schemaKey": self.uri, "message": "Cannot be parsed as JSON Schema AST"}
        attempt = instant_to_string(now)
        history = [
            {"errors": [{"error": "NotFound"}], "attempts": 1, "lastAttempt": attempt, "repository": name}
            for name in self.repositories
        ]
        return {"schemaKey": self.uri, "error": {"error": "ResolutionError", "lookupHistory": history}}


@functools.lru_cache(maxsize=4096)
def model_versions(config: ResolverConfig, uri: str) -> tuple[tuple[str, dict[str, Any]], ...] | IgluFailure:
    """The schemas of every version of `uri`'s model up to it, ascending (M-0-0, each earlier
    revision's additions up to the first missing one, every addition of its own revision), each
    read as a JSON Schema; else the failure of the first version that was not."""
    key = SchemaKey.parse(uri)
    assert key is not None
    resolver = resolver_for(config)
    found: list[tuple[str, dict[str, Any]]] = []
    for revision in range(key.revision + 1):
        addition = 0
        while revision < key.revision or addition <= key.addition:
            version = SchemaKey(key.vendor, key.name, key.format, f"{key.model}-{revision}-{addition}")
            schema = resolver.lookup(version)
            if schema is None:
                if revision < key.revision and addition > 0:
                    break
                return IgluFailure(version.uri, tuple(sorted(r.name for r in resolver.ordered(key.vendor))))
            if not parseable(schema):
                return IgluFailure(version.uri)
            found.append((version.version, schema))
            addition += 1
    return tuple(found)


def model_schema(config: ResolverConfig, uri: str) -> dict[str, Any] | IgluFailure:
    """The schema of `uri`, once every version of its model up to it was fetched (`model_versions`)."""
    versions = model_versions(config, uri)
    return versions if isinstance(versions, IgluFailure) else versions[-1][1]


@functools.lru_cache(maxsize=4096)
def _columns(config: ResolverConfig, uri: str) -> tuple[Column, ...] | IgluFailure:
    schema = model_schema(config, uri)
    return schema if isinstance(schema, IgluFailure) else tsv_columns(schema)


@attrs.frozen
class ShredModeLines:
    """One event into its shredded lines: (partition, line) pairs, or the `IgluFailure` of its first
    TSV entity without columns."""

    routing: Routing
    iglu: ResolverConfig

    def lines(self, event: Event, atomic: str | None = None) -> list[tuple[tuple[str, ...], str]] | IgluFailure:
        """The event's shredded lines with their partitions: its atomic line (`atomic`, when the
        caller made it already), then one line per entity; or the failure of a schema lookup."""
        root_id = event.get("event_id")
        root_tstamp = tsv_tstamp(event.get("collector_tstamp"))
        out: list[tuple[tuple[str, ...], str]] = [(ATOMIC_PARTITION, atomic or atomic_line(event))]
        entities = [*([event.unstruct] if event.unstruct is not None else []), *event.derived, *event.contexts]
        for entity in entities:
            fmt = self.routing.format_of(entity.key.uri)
            if fmt == JSON:
                out.append((partition(entity.key, JSON), entity_json(entity, root_id, root_tstamp)))
                continue
            columns = _columns(self.iglu, entity.key.uri)
            if isinstance(columns, IgluFailure):
                return columns
            out.append((partition(entity.key, TSV), entity_tsv(entity, root_id, root_tstamp, columns)))
        return out

    def types(self, event: Event) -> list[tuple[str, str, str]]:
        """(schema key, CONTEXT or SELF_DESCRIBING_EVENT, TSV or JSON) of each entity."""
        found = [(e.key.uri, CONTEXT) for e in (*event.contexts, *event.derived)]
        if event.unstruct is not None:
            found.append((event.unstruct.key.uri, SELF_DESCRIBING_EVENT))
        return [(uri, entity, self.routing.format_of(uri)) for uri, entity in found]


def _metadata(entity: Entity, root_id: str, root_tstamp: str) -> list[str]:
    key = entity.key
    tree = f'["events","{key.name}"]'
    return [key.vendor, key.name, key.format, key.version, root_id, root_tstamp, "events", tree, "events"]


def entity_tsv(entity: Entity, root_id: str, root_tstamp: str, columns: Sequence[Column]) -> str:
    """An entity's TSV line: 9 metadata columns, then its schema's columns."""
    cells = [cell(entity.data, column.path) for column in columns]
    return "\t".join([*_metadata(entity, root_id, root_tstamp), *cells])


def entity_json(entity: Entity, root_id: str, root_tstamp: str) -> str:
    """An entity's JSON line: its schema's parts, its data as parsed, its place in the event."""
    schema, tree = _json_parts(entity.key)
    hierarchy = f'{{"rootId":"{root_id}","rootTstamp":"{root_tstamp}",{tree}}}'
    return f'{{"schema":{schema},"data":{circe.dumps(entity.data)},"hierarchy":{hierarchy}}}'


@functools.lru_cache(maxsize=1024)
def _json_parts(key: SchemaKey) -> tuple[str, str]:
    """A JSON line's schema object and its tree's fields, the same for every entity of one key."""
    schema = {"vendor": key.vendor, "name": key.name, "format": key.format, "version": key.version}
    return circe.dumps(schema), f'"refRoot":"events","refTree":["events","{key.name}"],"refParent":"events"'
