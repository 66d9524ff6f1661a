"""Every line the shred job writes (SPEC §5), built from decided events a whole Arrow batch at a time.

Pure pyarrow, no Spark: lines whose id is on no other line are decided and turned into output lines
in the same trip to Python as their checks (see `udfs.shred_unshared`); the few others, after
Spark's dedup, make one trip here too (`udfs.lines_of`). Each event gives one row carrying its
status and counts (its atomic line, its bad row, or no line for a dropped duplicate), and kept
events one row per entity.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KEPT = "kept"
BAD = "bad"
IN_BATCH = "in_batch_duplicate"
CROSS_BATCH = "cross_batch_duplicate"
MANIFEST_ERROR = "manifest_error"
STATUSES = (KEPT, BAD, IN_BATCH, CROSS_BATCH, MANIFEST_ERROR)

ATOMIC_KIND, SHREDDED_KIND, BAD_KIND = "atomic", "shredded", "bad"
PARTITIONS = ["vendor", "name", "format", "version"]
NO_PARTITION = "_"
"""The partition values of atomic and bad lines, which have no schema."""
DUPLICATE_CONTEXT = ("com.snowplowanalytics.snowplow", "duplicate", "jsonschema", "1-0-0")

LINES_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        *((name, pa.string()) for name in PARTITIONS),
        ("value", pa.string()),
        ("status", pa.string()),
        ("synthetic", pa.bool_()),
        ("synthetic_across", pa.bool_()),
        ("id_events", pa.int64()),
        ("id_first", pa.bool_()),
    ]
)
"""One output line (`kind` and the partitions say where it goes, `value` is the line) or, with a
null `value`, a dropped duplicate; the other columns are set on the one row of each event: its
`status`, whether it was re-identified, and for valid events how many valid events share its id
(`id_events`) and whether it is the first of them (`id_first`), for the summary."""

DECIDED_COLUMNS = (
    "status",
    "event_id",
    "new_event_id",
    "synthetic",
    "synthetic_across",
    "id_events",
    "id_first",
    "collector_tstamp",
    "atomic_before",
    "atomic_after",
    "entities",
    "line",
    "errors",
)
"""What `output_lines` reads of each event: its status and final id (`new_event_id`, for kept
events), the parts of its atomic line around the id (see `fields.Fields`), its entities, and for
bad rows its input line and messages."""

_NULL_TEXT = pa.scalar(None, pa.string())


def output_lines(events: Mapping[str, pa.Array], failure_tstamp: str) -> list[pa.RecordBatch]:
    """The rows of `LINES_SCHEMA` for a batch of decided events (`DECIDED_COLUMNS`): one batch of
    a row per event, one of a row per entity.

    Each batch comes in the order of the partitioned write (kind, then schema), so that the
    write's sort of a task's rows finds them in long sorted runs.
    """
    status = events["status"]
    kept = pc.fill_null(pc.equal(status, KEPT), False)
    bad = pc.fill_null(pc.is_in(status, pa.array([BAD, MANIFEST_ERROR])), False)
    atomic = pc.binary_join_element_wise(events["atomic_before"], events["new_event_id"], events["atomic_after"], "\t")
    value = pc.if_else(kept, atomic, pc.if_else(bad, _bad_rows(events, bad, failure_tstamp), _NULL_TEXT))
    kind = pc.if_else(kept, ATOMIC_KIND, pc.if_else(bad, BAD_KIND, _NULL_TEXT))
    no_partition = pa.array([NO_PARTITION] * len(status), pa.string())
    one_per_event = pa.RecordBatch.from_arrays(
        [
            kind,
            *([no_partition] * len(PARTITIONS)),
            value,
            status,
            *(events[name] for name in ("synthetic", "synthetic_across", "id_events", "id_first")),
        ],
        schema=LINES_SCHEMA,
    )
    if pc.any(bad).as_py():
        one_per_event = one_per_event.take(pc.array_sort_indices(kind, null_placement="at_end"))
    return [one_per_event, _entity_lines(events, kept)]


def _entity_lines(events: Mapping[str, pa.Array], kept: pa.Array) -> pa.RecordBatch:
    """A line per entity of each kept event, and its `duplicate` context if it was re-identified."""
    entities = pc.if_else(kept, events["entities"], pa.scalar(None, events["entities"].type))
    flat = pc.list_flatten(entities)
    parent = pc.list_parent_indices(entities).cast(pa.int64())
    synthetic = np.flatnonzero(pc.and_(kept, pc.fill_null(events["synthetic"], False)).to_numpy(zero_copy_only=False))
    if len(synthetic):
        originals = events["event_id"].take(synthetic)
        duplicate = [pa.array([part] * len(synthetic), pa.string()) for part in DUPLICATE_CONTEXT]
        data = pc.binary_join_element_wise('{"originalEventId":"', originals, '"}', "")
        flat = pa.concat_arrays([flat, pa.StructArray.from_arrays([*duplicate, data], fields=list(flat.type))])
        parent = pa.concat_arrays([parent, pa.array(synthetic, pa.int64())])
    order = _schema_order(*(flat.field(name) for name in PARTITIONS))
    flat, parent = flat.take(order), parent.take(order)
    columns = {name: flat.field(name) for name in (*PARTITIONS, "data")}
    value = pc.binary_join_element_wise(
        '{"schema":{"vendor":"',
        columns["vendor"],
        '","name":"',
        columns["name"],
        '","format":"',
        columns["format"],
        '","version":"',
        columns["version"],
        '"},"data":',
        columns["data"],
        ',"hierarchy":{"rootId":"',
        events["new_event_id"].take(parent),
        '","rootTstamp":"',
        events["collector_tstamp"].take(parent),
        '","refRoot":"events","refTree":["events","',
        columns["name"],
        '"],"refParent":"events"}}',
        "",
    )
    count = len(value)
    nothing = [pa.nulls(count, field.type) for field in LINES_SCHEMA][len(PARTITIONS) + 2 :]
    return pa.RecordBatch.from_arrays(
        [pa.array([SHREDDED_KIND] * count, pa.string()), *(columns[name] for name in PARTITIONS), value, *nothing],
        schema=LINES_SCHEMA,
    )


def _schema_order(*parts: pa.Array) -> np.ndarray:
    """The positions of the entities sorted by their schema's parts, through the batch's few
    distinct schemas (Iglu parts hold no NUL, so the joined key sorts as the parts do)."""
    encoded = pc.binary_join_element_wise(*parts, "\x00").dictionary_encode()
    rank = np.argsort(np.argsort(encoded.dictionary.to_numpy(zero_copy_only=False)))
    order: np.ndarray = np.argsort(rank[encoded.indices.to_numpy()], kind="stable")
    return order


def _bad_rows(events: Mapping[str, pa.Array], bad: pa.Array, failure_tstamp: str) -> pa.Array:
    """The bad row of each bad event, null elsewhere: Python only for those rows."""
    rows: list[str | None] = [None] * len(bad)
    lines, errors = events["line"].view(pa.binary()), events["errors"]
    for row in np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist():
        rows[row] = bad_row(lines[row].as_py(), errors[row].as_py(), failure_tstamp)
    return pa.array(rows, pa.string())


def bad_row(line: bytes, messages: list[str], failure_tstamp: str) -> str:
    """`{"line":...,"errors":[{"level":"error","message":...}],"failure_tstamp":...}`: the line
    untouched but for invalid UTF-8, shown as U+FFFD."""
    document = {
        "line": line.decode("utf-8", "replace"),
        "errors": [{"level": "error", "message": message} for message in messages],
        "failure_tstamp": failure_tstamp,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
