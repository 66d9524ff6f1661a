"""The `shredding_complete` message that commits a run: written as the run folder's
`shredding_complete.json` and sent to the configured queue."""

from __future__ import annotations

from collections.abc import Iterable

from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.jvm import instant_to_string
from events_manifest._transformer.output.bad_rows import ARTIFACT
from events_manifest._transformer.output.formats import Formats, Shred, WideRowJson, WideRowParquet
from events_manifest._version import __version__

SCHEMA = "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/2-0-1"


LEGACY_SCHEMA = "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/1-0-1"


def shredding_complete(
    base: str,
    types: Iterable[tuple[str, str, str]],
    *,
    formats: Formats,
    started: int,
    completed: int,
    earliest: int | None,
    latest: int | None,
    compression: str,
    good: int,
    bad: int,
    legacy: bool = False,
) -> str:
    """The run's message (times in nanoseconds since the epoch), as `formats` says: wide rows of
    a file format, or shredded output (`legacy`: the 1-0-1 message). `types` are (schema key, entity,
    format) triples, the format empty for wide rows; listed sorted."""
    listed = sorted(set(types))
    timestamps = {
        "jobStarted": instant_to_string(started),
        "jobCompleted": instant_to_string(completed),
        "min": None if earliest is None else instant_to_string(earliest),
        "max": None if latest is None else instant_to_string(latest),
    }
    processor = {"artifact": ARTIFACT, "version": __version__}
    count = {"good": circe.Number(good), "bad": circe.Number(bad)}
    if legacy:
        legacy_types = [
            {"schemaKey": key, "format": fmt} for key, fmt in sorted({(key, fmt) for key, _, fmt in listed})
        ]
        data = {"base": base, "types": legacy_types, "timestamps": timestamps, "compression": compression}
        return circe.dumps({"schema": LEGACY_SCHEMA, "data": {**data, "processor": processor, "count": count}})
    wide_rows = [{"schemaKey": key, "snowplowEntity": entity} for key, entity, _ in listed]
    types_info: dict[str, object]
    match formats:
        case Shred():
            entries = [{"schemaKey": key, "format": fmt, "snowplowEntity": entity} for key, entity, fmt in listed]
            types_info = {"types": entries, "transformation": "SHREDDED"}
        case WideRowJson():
            types_info = {"fileFormat": "JSON", "types": wide_rows, "transformation": "WIDEROW"}
        case WideRowParquet():
            types_info = {"fileFormat": "PARQUET", "types": wide_rows, "transformation": "WIDEROW"}
    data = {
        "base": base,
        "typesInfo": types_info,
        "timestamps": timestamps,
        "compression": compression,
        "processor": processor,
        "count": count,
    }
    return circe.dumps({"schema": SCHEMA, "data": data})
