"""Building enriched lines and reading the shred job's outputs, for the Spark tests."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from events_manifest.snowplow.fields import FIELD_NAMES

INDEX = {name: i for i, name in enumerate(FIELD_NAMES)}
CONTEXTS_URI = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
UNSTRUCT_URI = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
JSON_FIELDS = (52, 58, 122)


def line(
    event_id: str,
    fingerprint: str = "",
    etl: str = "2026-11-01 06:00:00.000",
    collector: str = "2026-11-01 05:59:00.000",
    *,
    fields: int = 131,
    **values: str,
) -> str:
    """A tab-separated enriched line of `fields` fields; keyword arguments name other fields."""
    f = [""] * 131
    f[0], f[1], f[5] = "app", "web", "page_view"
    f[INDEX["etl_tstamp"]], f[INDEX["collector_tstamp"]] = etl, collector
    f[INDEX["event_id"]], f[INDEX["event_fingerprint"]] = event_id, fingerprint
    for name, value in values.items():
        f[INDEX[name]] = value
    return "\t".join(f[:fields])


def contexts(*entities: str) -> str:
    return '{"schema":"' + CONTEXTS_URI + '","data":[' + ",".join(entities) + "]}"


def unstruct(entity: str) -> str:
    return '{"schema":"' + UNSTRUCT_URI + '","data":' + entity + "}"


def sdj(uri: str, data: str) -> str:
    return '{"schema":"' + uri + '","data":' + data + "}"


def atomic(input_line: str, event_id: str | None = None) -> str:
    """What the output layout (docs/shred-job.md) says the atomic line of an input line is, written
    independently of the job (no field here is over its limit)."""
    f = input_line.split("\t")
    f += [""] * (131 - len(f))
    if event_id is not None:
        f[6] = event_id
    return "\t".join(v for i, v in enumerate(f) if i not in JSON_FIELDS)


def shredded(vendor: str, name: str, version: str, data: str, root_id: str, root_tstamp: str) -> str:
    return (
        f'{{"schema":{{"vendor":"{vendor}","name":"{name}","format":"jsonschema","version":"{version}"}},'
        f'"data":{data},"hierarchy":{{"rootId":"{root_id}","rootTstamp":"{root_tstamp}","refRoot":"events",'
        f'"refTree":["events","{name}"],"refParent":"events"}}}}'
    )


def write_input(folder: Path, *files: list[str]) -> Path:
    """One file of lines each; a lone surrogate such as "\\udcff" is written as that raw byte."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, lines in enumerate(files):
        text = "".join(x + "\n" for x in lines)
        (folder / f"part-{n:05d}.tsv").write_bytes(text.encode("utf-8", "surrogateescape"))
    return folder


def _lines(folder: Path) -> list[str]:
    """Lines split on "\n" only, as Spark writes them (a field may hold "\r" or "\u2028")."""
    return sorted(x for p in folder.glob("part-*") for x in p.read_bytes().decode("utf-8").split("\n")[:-1])


def read_output(out: Path) -> dict[str, list[str]]:
    """Every output folder (relative path) with its lines, sorted: atomic events and shredded types."""
    result = {"atomic-events": _lines(out / "atomic-events")}
    for folder in sorted((out / "shredded-types").glob("vendor=*/name=*/format=*/version=*")):
        result[str(folder.relative_to(out))] = _lines(folder)
    return result


def read_bad(bad: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in _lines(bad)]
    for row in rows:
        assert list(row) == ["line", "errors", "failure_tstamp"]
        row.pop("failure_tstamp")
    return sorted(rows, key=lambda r: r["line"])


def uuid5(namespace: str, name: str) -> str:
    return str(uuid.uuid5(uuid.UUID(namespace), name))
