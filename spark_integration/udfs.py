"""The places where Spark hands rows to Python, one Arrow batch at a time.

- `checked_lines`: split and check enriched lines (`fields`), validate their JSON columns and cut
  out their entities byte for byte (`sdj`);
- `manifest_put`: one `try_put_many` call per batch against the manifest;
- `checked_lines_and_put`: both in one call, for lines whose id is on no other line;
- `manifest_taken`: which kept events an earlier batch stored with another fingerprint.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.functions import arrow_udf

from events_manifest import ManifestError
from events_manifest.model import from_epoch_seconds
from spark_integration import fields
from spark_integration.manifest_handle import ManifestHandle
from spark_integration.sdj import Found, IgluParts, read_rows

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

ENTITY_TYPE = T.StructType([T.StructField(n, T.StringType()) for n in ("vendor", "name", "format", "version", "data")])
_TEXT, _MICROS = T.StringType(), T.LongType()
LINE_TYPE = T.StructType(
    [
        *(T.StructField(n, _TEXT) for n in ("event_id", "fingerprint", "collector_tstamp")),
        *(T.StructField(n, _MICROS) for n in ("etl_us", "collector_us")),
        T.StructField("errors", T.ArrayType(_TEXT)),
        T.StructField("entities", T.ArrayType(ENTITY_TYPE)),
        *(T.StructField(n, _TEXT) for n in ("atomic_before", "atomic_after")),
    ]
)
"""What `checked_lines` adds to each line; `errors` holds every message (empty when valid)."""
PUT_TYPE = T.StructType([T.StructField("accepted", T.BooleanType()), T.StructField("error", T.StringType())])
LINE_AND_PUT_TYPE = T.StructType([*LINE_TYPE.fields, T.StructField("put", PUT_TYPE)])

_ENTITY_ARROW = pa.struct([(name, pa.string()) for name in ("vendor", "name", "format", "version", "data")])


def _checked(lines: pa.Array) -> dict[str, pa.Array]:
    """The columns of `LINE_TYPE` for a batch of lines: their fields, then their JSON columns."""
    found = fields.split_and_check(lines)
    json = read_rows(*(column.to_pylist() for column in found.json))
    return {
        "event_id": found.event_id,
        "fingerprint": found.fingerprint,
        "collector_tstamp": found.collector_tstamp,
        "etl_us": found.etl_us,
        "collector_us": found.collector_us,
        "errors": _errors(len(lines), found.errors, json),
        "entities": _entities(json),
        "atomic_before": found.atomic_before,
        "atomic_after": found.atomic_after,
    }


def _entities(found: Found) -> pa.ListArray:
    distinct: dict[IgluParts, int] = {}
    schema_of = pa.array([distinct.setdefault(iglu, len(distinct)) for iglu in found.parts], pa.int32())
    parts = zip(*distinct, strict=True) if distinct else [()] * 4
    columns = [pa.array(part, pa.string()).take(schema_of) for part in parts]
    data = pa.array(found.data, pa.binary()).cast(pa.string())  # UTF-8 already checked
    return _lists(found.entity_ends, pa.StructArray.from_arrays([*columns, data], fields=list(_ENTITY_ARROW)))


def _errors(rows: int, of_fields: dict[int, list[str]], found: Found) -> pa.ListArray:
    """Each line's field messages, then its JSON messages; Python only for lines that have any."""
    json_ends = np.array([0, *found.error_ends], dtype=np.int64)
    counts = np.diff(json_ends)
    for row, listed in of_fields.items():
        counts[row] += len(listed)
    messages: list[str] = []
    for row in np.flatnonzero(counts).tolist():
        messages += of_fields.get(row, ())
        messages += found.errors[json_ends[row] : json_ends[row + 1]]
    return _lists(np.cumsum(counts).tolist(), pa.array(messages, pa.string()))


def _lists(ends: list[int], values: pa.Array) -> pa.ListArray:
    """Row i of the result holds `values[ends[i-1]:ends[i]]`."""
    return pa.ListArray.from_arrays(pa.array([0, *ends], pa.int32()), values)


def _lines(lines: pa.Array) -> pa.Array:  # the hint tells Spark: scalar
    return _struct(_checked(lines))


def _struct(columns: dict[str, pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(list(columns.values()), names=list(columns))


checked_lines: UserDefinedFunctionLike = arrow_udf(_lines, LINE_TYPE)  # type: ignore[call-overload]


def _put(
    handle: ManifestHandle, event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array
) -> pa.StructArray:
    """(accepted, error) of each wanted row, put in one `try_put_many` call; nulls elsewhere."""
    ids, fingerprint_list, etls = event_ids.to_pylist(), fingerprints.to_pylist(), etl_seconds.to_pylist()
    positions = [i for i, w in enumerate(wanted.to_pylist()) if w]
    accepted: list[bool | None] = [None] * len(ids)
    errors: list[str | None] = [None] * len(ids)
    if positions:
        times = {s: from_epoch_seconds(s) for s in set(etls)}  # one per batch in the shred job
        items = ((ids[i], fingerprint_list[i], times[etls[i]]) for i in positions)
        outcomes = handle.open().try_put_many(items)
        for i, outcome in zip(positions, outcomes, strict=True):
            if isinstance(outcome, ManifestError):
                errors[i] = f"Manifest: {outcome}"
            else:
                accepted[i] = outcome
    return pa.StructArray.from_arrays(
        [pa.array(accepted, type=pa.bool_()), pa.array(errors, type=pa.string())], names=["accepted", "error"]
    )


def manifest_put(handle: ManifestHandle) -> UserDefinedFunctionLike:
    """A UDF (event_id, fingerprint, wanted, etl_seconds) -> (accepted, error) that puts the wanted rows.

    Marked non-deterministic so Spark never duplicates the call in a plan; if a task is retried,
    its puts are repeated with the same etl time and so accepted again: retries are safe.
    """

    def put(event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array) -> pa.Array:
        return _put(handle, event_ids, fingerprints, wanted, etl_seconds)

    udf: UserDefinedFunctionLike = arrow_udf(put, PUT_TYPE)  # type: ignore[call-overload]
    return udf.asNondeterministic()


def checked_lines_and_put(handle: ManifestHandle) -> UserDefinedFunctionLike:
    """`checked_lines` and `manifest_put` in one call: a UDF (line, etl_seconds) -> `LINE_TYPE`
    and `put`, which puts each valid line, its missing fingerprint filled as `dedup_single`
    fills it. One trip to Python for the shred job's lines whose id is on no other line;
    non-deterministic, as `manifest_put`."""

    def checked_and_put(lines: pa.Array, etl_seconds: pa.Array) -> pa.Array:
        columns = _checked(lines)
        valid = pc.equal(pc.list_value_length(columns["errors"]), 0)
        event_ids = columns["event_id"]
        columns["fingerprint"] = _filled(event_ids, columns["fingerprint"], valid, etl_seconds)
        columns["put"] = _put(handle, event_ids, columns["fingerprint"], valid, etl_seconds)
        return _struct(columns)

    udf: UserDefinedFunctionLike = arrow_udf(checked_and_put, LINE_AND_PUT_TYPE)  # type: ignore[call-overload]
    return udf.asNondeterministic()


def missing_fingerprint(etl_seconds: int) -> str:
    """What a missing fingerprint is derived from, before the event's rank among its id's
    fingerprint-less events (see `dedup.filled_fingerprint`)."""
    return f"missing-fingerprint:{etl_seconds}:"


def _filled(event_ids: pa.Array, fingerprints: pa.Array, valid: pa.Array, etl_seconds: pa.Array) -> pa.Array:
    """Missing fingerprints of valid lines filled as `dedup.filled_fingerprint` fills an event's
    first: a UUID v5 of its id and `missing_fingerprint(etl) + "1"`."""
    missing = pc.and_(valid, pc.equal(fingerprints, "")).to_numpy(zero_copy_only=False)
    if not missing.any():
        return fingerprints
    filled = fingerprints.to_pylist()
    for row in missing.nonzero()[0].tolist():
        name = missing_fingerprint(etl_seconds[row].as_py()) + "1"
        filled[row] = str(uuid.uuid5(uuid.UUID(event_ids[row].as_py()), name))
    return pa.array(filled, pa.string())


def manifest_taken(handle: ManifestHandle, etl_seconds: int) -> UserDefinedFunctionLike:
    """A UDF (event_id, fingerprint, wanted) -> bool: whether an earlier batch (etl before this
    one's, entry not expired) stored the wanted row's id with another fingerprint."""

    def taken(event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array) -> pa.Array:
        ids, fingerprint_list = event_ids.to_pylist(), fingerprints.to_pylist()
        positions = [i for i, w in enumerate(wanted.to_pylist()) if w]
        answers: list[bool | None] = [None] * len(ids)
        if positions:
            stored = handle.open().entries_of(ids[i] for i in positions)
            for i in positions:
                answers[i] = any(
                    e.fingerprint != fingerprint_list[i] and e.etl_seconds < etl_seconds < e.ttl_seconds
                    for e in stored[ids[i]]
                )
        return pa.array(answers, type=pa.bool_())

    udf: UserDefinedFunctionLike = arrow_udf(taken, T.BooleanType())  # type: ignore[call-overload]
    return udf.asNondeterministic()
