"""The transformer's bad rows (docs/transformer.md): self-describing JSON of the
`com.snowplowanalytics.snowplow.badrows` schemas, `processor` this package, compact."""

from __future__ import annotations

from typing import Any

from events_manifest._snowplow.fields import FIELD_KINDS, FIELD_NAMES
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import Entity, Event
from events_manifest._transformer.decode.jvm import instant_to_string
from events_manifest._transformer.output.widerow import atomic_value
from events_manifest._version import __version__

ARTIFACT = "events-manifest"
PROCESSOR = f'{{"artifact":{circe.string(ARTIFACT)},"version":{circe.string(__version__)}}}'
BADROWS = "iglu:com.snowplowanalytics.snowplow.badrows"
PARSING_ERROR = f"{BADROWS}/loader_parsing_error/jsonschema/2-0-0"
RUNTIME_ERROR = f"{BADROWS}/loader_runtime_error/jsonschema/1-0-1"
GENERIC_ERROR = f"{BADROWS}/generic_error/jsonschema/1-0-0"
IGLU_ERROR = f"{BADROWS}/loader_iglu_error/jsonschema/2-0-0"
SIZE_VIOLATION = f"{BADROWS}/size_violation/jsonschema/1-0-0"
CONTEXTS_1_0_0 = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
UNSTRUCT_1_0_0 = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
MINIMUM_TIMESTAMP_FIELDS = (
    "collector_tstamp",
    "derived_tstamp",
    "dvce_created_tstamp",
    "dvce_sent_tstamp",
    "etl_tstamp",
    "refr_dvce_tstamp",
    "true_tstamp",
)


def _bad_row(schema: str, failure: str, payload: str) -> str:
    return f'{{"schema":"{schema}","data":{{"processor":{PROCESSOR},"failure":{failure},"payload":{payload}}}}}'


def parsing_error(line: str, error: dict[str, Any]) -> str:
    """A line that does not decode: its `ParsingError` and the line as it was read."""
    return _bad_row(PARSING_ERROR, circe.dumps(error), circe.string(line))


def runtime_error(event: Event, message: str) -> str:
    """An event whose cross-batch put failed, with the failure's message."""
    return _bad_row(RUNTIME_ERROR, circe.string(message), event_payload(event))


def iglu_error(event: Event, failures: list[dict[str, Any]]) -> str:
    """An event whose entities' schemas could not be fetched or read: the failures, the event."""
    return _bad_row(IGLU_ERROR, circe.dumps(failures), event_payload(event))


def size_violation(row: str, size: int, limit: int, now: int) -> str:
    """A row too large for where it goes (a Kinesis record): its beginning, as much as fits in
    `limit` bytes with the envelope, in a `size_violation` bad row dated `now`."""
    failure = circe.dumps(
        {
            "timestamp": instant_to_string(now),
            "maximumAllowedSizeBytes": circe.Number(limit),
            "actualSizeBytes": circe.Number(size),
            "expectation": "a bad row within the Kinesis record limit",
        }
    )
    room = max(limit - len(_bad_row(SIZE_VIOLATION, failure, '""').encode()), 0) // 6  # a character escaped takes 6
    return _bad_row(SIZE_VIOLATION, failure, circe.string(row[:room]))


def schema_of(bad_row: str) -> str:
    """A bad row's schema URI (its first member, as `_bad_row` writes it)."""
    return bad_row[len('{"schema":"') : bad_row.index('"', len('{"schema":"'))]


def too_early(event: Event, minimum: int, now: int) -> str | None:
    """The `generic_error` of an event with a timestamp before `minimum` (nanoseconds), or None."""
    errors = [
        f"Timestamp {instant_to_string(value)} is before than minimum timestamp, at column {name}"
        for name in MINIMUM_TIMESTAMP_FIELDS
        if (value := event.get(name)) is not None and value < minimum
    ]
    if not errors:
        return None
    failure = circe.dumps({"timestamp": instant_to_string(now), "errors": errors})
    return _bad_row(GENERIC_ERROR, failure, circe.string(event_payload(event)))


def _sdj(schema: str, data: str) -> str:
    return f'{{"schema":{circe.string(schema)},"data":{data}}}'


def _entity(entity: Entity) -> str:
    return _sdj(entity.key.uri, circe.dumps(entity.data))


def _contexts(entities: list[Entity]) -> str:
    if not entities:
        return "{}"
    return _sdj(CONTEXTS_1_0_0, "[" + ",".join(map(_entity, entities)) + "]")


def event_payload(event: Event) -> str:
    """The whole event as bad rows carry it: the 131 fields in order, contexts as 1-0-0 lists."""
    parts = []
    for name in FIELD_NAMES:
        if name in ("contexts", "derived_contexts"):
            value = _contexts(event.contexts if name == "contexts" else event.derived)
        elif name == "unstruct_event":
            value = "null" if event.unstruct is None else _sdj(UNSTRUCT_1_0_0, _entity(event.unstruct))
        else:
            value = atomic_value(FIELD_KINDS[name], event.get(name))
        parts.append(f'"{name}":{value}')
    return "{" + ",".join(parts) + "}"
