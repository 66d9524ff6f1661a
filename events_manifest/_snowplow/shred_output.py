"""Every line the shred job writes, built from decided events a whole Arrow batch at a time: the
atomic line, each entity's line with its hierarchy, the `duplicate` context of a re-identified
event, the bad rows (worded by `bad_rows`) and the counts of the summary.

Pure pyarrow, no Spark: called by `batch.Shred` on each batch of the job's lines, in the trip to
Python that checks and decides them.

A batch's lines come back to Spark grouped by the place they go (atomic, bad, or one shredded
type: `PARTITIONS`), in rows of about `CHUNK_BYTES` of lines joined by line breaks, with one row of
the batch's counts. Spark's text writer ends each row with a line break, so the files are the same
as with a row per line, and the JVM handles a few rows per batch instead of tens of thousands.
Each line is built ending with its line break, and a row is a slice of the lines' own buffer: no
line is copied to group them (see `_grouped`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._jobs.folders import Layout
from events_manifest._jobs.staging import Move
from events_manifest._jobs.storage import join
from events_manifest._snowplow.dedup import BAD, KEPT, MANIFEST_ERROR, STATUSES
from events_manifest._snowplow.legacy_bad_rows import bad_row
from events_manifest._snowplow.summary import BUCKET_BOUNDS, BUCKET_COUNTS
from events_manifest.errors import ManifestError, to_record

ATOMIC = "atomic-events"
SHREDDED = "shredded-types"
SUMMARY = "_summary.json"
MARKER = "_shred.json"
_RUN_MARKER = "_run.json"
"""What earlier versions of the job wrote while a run was under way: still the job's own when found."""


def _owned(role: str, name: str) -> bool:
    if name == _RUN_MARKER:
        return True
    if role == "output":
        return name in {ATOMIC, SHREDDED, SUMMARY}
    return name == "_SUCCESS" or name.startswith("part-")


LAYOUT = Layout("shred job", MARKER, _owned, {"output": SUMMARY})
"""The shred job's folders: the output folder holds `atomic-events/`, `shredded-types/` and the
run's summary, the bad folder the bad rows' `part-*` files; each run marks both (`_shred.json`),
and an output folder from before markers is known by its summary."""

ATOMIC_KIND, SHREDDED_KIND, BAD_KIND = "atomic", "shredded", "bad"
PARTITIONS = ("kind", "type")
"""Where a row of lines goes: its kind, and for shredded lines their `vendor/name/format/version`.
The output is written partitioned by these two alone, so each task makes a folder per kind and
type, not one per level of `vendor=/name=/format=/version=` (`output.Staging` lays those out)."""
NO_TYPE = "_"
"""The type of atomic and bad lines, which have no schema."""
SCHEMA_PARTS = ("vendor", "name", "format", "version")
"""An entity's schema, in the order of its `type` (`vendor/name/format/version`) and of the
folders of its lines (`vendor=/name=/format=/version=`)."""
DUPLICATE_CONTEXT = ("com.snowplowanalytics.snowplow", "duplicate", "jsonschema", "1-0-0")
CHUNK_BYTES = 256 * 1024
"""About how much text one row of grouped lines holds: large enough that the JVM handles few
rows, small enough that none is a humongous object to its garbage collector."""

COUNTS = (*STATUSES, "synthetic", "synthetic_across", *BUCKET_COUNTS.values())
"""What a count row counts: events per status, re-identified events (and of them those of an id
an earlier batch had), and event ids per number of valid events."""

LINES_SCHEMA = pa.schema(
    [
        *((name, pa.string()) for name in PARTITIONS),
        ("value", pa.string()),
        ("lines", pa.int64()),
        *((name, pa.int64()) for name in COUNTS),
        ("failure", pa.string()),
    ]
)
"""A group of output lines (`PARTITIONS` say where they go, `value` holds them joined by line
breaks, `lines` counts them); with a null `value`, the `COUNTS` of a batch, or the `failure` that
stopped a batch (`failed`)."""


def failed(error: ManifestError) -> pa.RecordBatch:
    """The row that tells the driver a batch could not be decided: the manifest failed as a whole
    (`errors.to_record`). The run fails with that error, and writes nothing."""
    row = {name: [None] for name in LINES_SCHEMA.names} | {"lines": [0], "failure": [to_record(error)]}
    return pa.RecordBatch.from_pydict(row, LINES_SCHEMA)


def output_lines(events: Mapping[str, pa.Array], failure_tstamp: str) -> list[pa.RecordBatch]:
    """Batches of `LINES_SCHEMA` rows for a batch of decided events: its atomic
    lines, its bad rows, its entities' lines by type, and last a row of its counts. It reads of
    each event its `status` and final id (`new_event_id`, for kept events), whether it was
    re-identified (`synthetic`, `synthetic_across`), for valid events how many valid events share
    its id (`id_events`) and whether it is the first of them (`id_first`), its `collector_tstamp`,
    the parts of its atomic line around the id (`atomic_before`, `atomic_after`: see
    `parsing.Fields`), its `entities`, and for bad rows its input `line` and `errors`."""
    status = events["status"]
    kept = pc.fill_null(pc.equal(status, KEPT), False)
    bad = pc.fill_null(pc.is_in(status, pa.array([BAD, MANIFEST_ERROR])), False)
    kept_ids = pc.if_else(kept, events["new_event_id"], pa.scalar(None, pa.string()))  # null: no line
    atomic = pc.binary_join_element_wise(
        events["atomic_before"], "\t", kept_ids, "\t", events["atomic_after"], "\n", ""
    )
    bad_rows = _bad_rows(events, bad, failure_tstamp)
    batches = [
        _grouped([(ATOMIC_KIND, NO_TYPE)], atomic, np.array([len(atomic)])),
        _grouped([(BAD_KIND, NO_TYPE)], bad_rows, np.array([len(bad_rows)])),
        _grouped(*_entity_lines(events, kept)),
    ]
    counts = _counts(events, kept)
    only_counts = {name: [None] for name in LINES_SCHEMA.names} | {"lines": [0]} | {n: [counts[n]] for n in COUNTS}
    return [*(batch for batch in batches if batch is not None), pa.RecordBatch.from_pydict(only_counts, LINES_SCHEMA)]


def _grouped(places: list[tuple[str, str]], values: pa.Array, group_ends: np.ndarray) -> pa.RecordBatch | None:
    """Rows of `LINES_SCHEMA` holding `values`, lines that each end with a line break (a null is
    no line), those up to `group_ends[g]` going to `places[g]`: each row about `CHUNK_BYTES` of
    whole lines, a slice of their own buffer without its last line break (Spark's text writer ends
    each row with one). That line break is a null row of its own, which the write leaves out."""
    offsets = _offsets(values).astype(np.int64)
    start, end = offsets[0], offsets[-1]
    if start == end:
        return None
    line_ends = offsets[1:][values.is_valid().to_numpy(zero_copy_only=False)]
    group_bytes = offsets[group_ends]
    cuts = np.searchsorted(line_ends, np.arange(start + CHUNK_BYTES, end, CHUNK_BYTES))  # the line that passes
    bounds = np.unique(np.concatenate([[start], group_bytes, line_ends[cuts], [end]]))
    ends = bounds[1:]
    rows = len(ends)
    slices = np.empty(2 * rows + 1, np.int32)  # each row, then the line break after it
    slices[0], slices[1::2], slices[2::2] = start, ends - 1, ends
    validity = np.packbits(np.tile([True, False], rows), bitorder="little")
    buffers = [pa.py_buffer(validity), pa.py_buffer(slices), values.buffers()[2]]
    value = pa.Array.from_buffers(pa.string(), 2 * rows, buffers, null_count=rows)
    chunk_group = np.searchsorted(group_bytes, ends, side="left").tolist()
    lines_in = np.diff(np.searchsorted(line_ends, bounds, side="right"))
    columns: dict[str, list[object]] = {name: [None] * (2 * rows) for name in PARTITIONS}
    for i, name in enumerate(PARTITIONS):
        columns[name][::2] = [places[g][i] for g in chunk_group]
    counted = np.zeros(2 * rows, np.int64)
    counted[::2] = lines_in
    return pa.RecordBatch.from_arrays(
        [
            *(pa.array(columns[name], pa.string()) for name in PARTITIONS),
            value,
            pa.array(counted),
            *(pa.nulls(2 * rows, pa.int64()) for _ in COUNTS),
            pa.nulls(2 * rows, pa.string()),
        ],
        schema=LINES_SCHEMA,
    )


def rows_where(mask: pa.Array) -> np.ndarray:
    """The positions where a boolean array is true (null counts as false)."""
    positions: np.ndarray = np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))
    return positions


def _offsets(values: pa.Array) -> np.ndarray:
    """Where each string of an array starts in its data, and where the last ends."""
    if not len(values):
        return np.zeros(1, np.int32)
    return np.frombuffer(values.buffers()[1], np.int32)[values.offset : values.offset + len(values) + 1]


def _entity_lines(events: Mapping[str, pa.Array], kept: pa.Array) -> tuple[list[tuple[str, str]], pa.Array, np.ndarray]:
    """A line per entity of each kept event, and its `duplicate` context if it was re-identified,
    grouped by type: their places, the lines, and where each type's lines end."""
    flat = pc.list_flatten(events["entities"])
    parent = pc.list_parent_indices(events["entities"]).cast(pa.int64())
    synthetic = rows_where(pc.and_(kept, events["synthetic"]))
    if len(synthetic):
        originals = events["event_id"].take(synthetic)
        duplicate = [pa.array([part] * len(synthetic), pa.string()) for part in DUPLICATE_CONTEXT]
        data = pc.binary_join_element_wise('{"originalEventId":"', originals, '"}', "")
        flat = pa.concat_arrays([flat, pa.StructArray.from_arrays([*duplicate, data], fields=list(flat.type))])
        parent = pa.concat_arrays([parent, pa.array(synthetic, pa.int64())])
    written = np.flatnonzero(kept.to_numpy(zero_copy_only=False)[parent.to_numpy()])  # entities of kept events
    if not len(written):
        return [], pa.array([], pa.string()), np.zeros(0, np.int64)
    schemas = pc.binary_join_element_wise(*(flat.field(name) for name in SCHEMA_PARTS), "/").dictionary_encode()
    codes = schemas.indices.to_numpy()[written]
    order = written[np.argsort(codes, kind="stable")]  # kept and grouped by type in one take
    flat, parent = flat.take(order), parent.take(order)
    columns = {name: flat.field(name) for name in (*SCHEMA_PARTS, "data")}
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
        '"],"refParent":"events"}}\n',
        "",
    )
    places = [(SHREDDED_KIND, schema) for schema in schemas.dictionary.to_pylist()]
    return places, value, np.cumsum(np.bincount(codes, minlength=len(places)))


def _counts(events: Mapping[str, pa.Array], kept: pa.Array) -> dict[str, int]:
    """The count row of a batch (see `COUNTS`)."""
    statuses = pc.value_counts(events["status"]).to_pylist()
    found = dict.fromkeys(COUNTS, 0)
    found.update({entry["values"]: entry["counts"] for entry in statuses if entry["values"] is not None})
    for name in ("synthetic", "synthetic_across"):
        found[name] = len(rows_where(pc.and_(kept, events[name])))
    first = pc.fill_null(events["id_first"], False)
    id_events = events["id_events"]
    for name, least, most in BUCKET_BOUNDS:
        within = pc.greater_equal(id_events, least)
        if most is not None:
            within = pc.and_(within, pc.less_equal(id_events, most))
        found[BUCKET_COUNTS[name]] = len(rows_where(pc.and_(first, within)))
    return found


def _bad_rows(events: Mapping[str, pa.Array], bad: pa.Array, failure_tstamp: str) -> pa.Array:
    """The bad row of each bad event: Python only for those rows."""
    lines, errors = events["line"].view(pa.binary()), events["errors"]
    rows = rows_where(bad).tolist()
    rows_text = [bad_row(lines[row].as_py(), errors[row].as_py(), failure_tstamp) + "\n" for row in rows]
    return pa.array(rows_text, pa.string())


def staged(path: str, kind: str) -> str:
    """Where the lines of one kind are under a staging folder Spark wrote them to, partitioned by
    `PARTITIONS` (shredded: a `type=` folder per type, see `type_folder`)."""
    folder = join(path, f"kind={kind}")
    return folder if kind == SHREDDED_KIND else join(folder, f"type={NO_TYPE}")


def places(written: Sequence[str], output_path: str, bad_path: str) -> list[Move]:
    """Where the lines staged at each of `written` go: atomic lines and each
    shredded type under the output folder, bad rows into the bad folder."""
    atomic, shredded = join(output_path, ATOMIC), join(output_path, SHREDDED)
    return [
        move
        for path in written
        for move in (
            (staged(path, ATOMIC_KIND), atomic, None),
            (staged(path, SHREDDED_KIND), shredded, type_folder),
            (staged(path, BAD_KIND), bad_path, str),
        )
    ]


def type_folder(staged_name: str) -> str:
    """The folder under `shredded-types/` of a staged `type=` folder: Spark's partitioned write
    escapes the slashes of `vendor/name/format/version` (as `%2F`), which Iglu names never hold."""
    parts = unquote(staged_name.removeprefix("type=")).split("/")
    return "/".join(f"{name}={part}" for name, part in zip(SCHEMA_PARTS, parts, strict=True))
