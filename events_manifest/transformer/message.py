"""The `shredding_complete` message that commits a run: written as the run folder's
`shredding_complete.json` and sent to the configured queue."""

from __future__ import annotations

from collections.abc import Iterable

from events_manifest import __version__
from events_manifest.transformer import sdjson
from events_manifest.transformer.bad_rows import ARTIFACT
from events_manifest.transformer.jvm import instant_to_string

SCHEMA = "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/2-0-1"


def shredding_complete(
    base: str,
    types: Iterable[tuple[str, str]],
    *,
    file_format: str,
    started: int,
    completed: int,
    earliest: int | None,
    latest: int | None,
    compression: str,
    good: int,
    bad: int,
) -> str:
    """The wide-row message (times in nanoseconds since the epoch), types sorted by key then entity."""
    types_info = {
        "fileFormat": file_format.upper(),
        "types": [{"schemaKey": key, "snowplowEntity": entity} for key, entity in sorted(set(types))],
        "transformation": "WIDEROW",
    }
    data = {
        "base": base,
        "typesInfo": types_info,
        "timestamps": {
            "jobStarted": instant_to_string(started),
            "jobCompleted": instant_to_string(completed),
            "min": None if earliest is None else instant_to_string(earliest),
            "max": None if latest is None else instant_to_string(latest),
        },
        "compression": compression,
        "processor": {"artifact": ARTIFACT, "version": __version__},
        "count": {"good": sdjson.Number(good), "bad": sdjson.Number(bad)},
    }
    return sdjson.dumps({"schema": SCHEMA, "data": data})
