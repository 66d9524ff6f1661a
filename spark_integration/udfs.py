"""The places where Spark hands rows to Python, one Arrow batch at a time.

- `json_entities`: validate the JSON columns and cut out their entities byte for byte;
- `manifest_put`: one `try_put_many` call per batch against the manifest;
- `json_entities_and_put`: both in one call, for rows known valid but for their JSON;
- `manifest_taken`: which kept events an earlier batch stored with another fingerprint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.functions import arrow_udf

from events_manifest import ManifestError
from events_manifest.model import from_epoch_seconds
from spark_integration.manifest_handle import ManifestHandle
from spark_integration.sdj import IgluParts, read_rows

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

ENTITY_TYPE = T.StructType([T.StructField(n, T.StringType()) for n in ("vendor", "name", "format", "version", "data")])
ENTITIES_TYPE = T.StructType(
    [T.StructField("errors", T.ArrayType(T.StringType())), T.StructField("entities", T.ArrayType(ENTITY_TYPE))]
)
PUT_TYPE = T.StructType([T.StructField("accepted", T.BooleanType()), T.StructField("error", T.StringType())])
ENTITIES_AND_PUT_TYPE = T.StructType([*ENTITIES_TYPE.fields, T.StructField("put", PUT_TYPE)])

_ENTITY_ARROW = pa.struct([(name, pa.string()) for name in ("vendor", "name", "format", "version", "data")])


def _entities(contexts: pa.Array, unstruct: pa.Array, derived: pa.Array) -> pa.Array:  # the hint tells Spark: scalar
    found = read_rows(*(column.cast(pa.binary()).to_pylist() for column in (contexts, unstruct, derived)))
    distinct: dict[IgluParts, int] = {}
    schema_of = pa.array([distinct.setdefault(iglu, len(distinct)) for iglu in found.parts], pa.int32())
    parts = zip(*distinct, strict=True) if distinct else [()] * 4
    columns = [pa.array(part, pa.string()).take(schema_of) for part in parts]
    data = pa.array(found.data, pa.binary()).cast(pa.string())  # UTF-8 already checked
    flat = pa.StructArray.from_arrays([*columns, data], fields=list(_ENTITY_ARROW))
    errors = pa.array(found.errors, pa.string())
    return pa.StructArray.from_arrays(
        [_lists(found.error_ends, errors), _lists(found.entity_ends, flat)], names=["errors", "entities"]
    )


def _lists(ends: list[int], values: pa.Array) -> pa.ListArray:
    """Row i of the result holds `values[ends[i-1]:ends[i]]`."""
    return pa.ListArray.from_arrays(pa.array([0, *ends], pa.int32()), values)


json_entities: UserDefinedFunctionLike = arrow_udf(_entities, ENTITIES_TYPE)  # type: ignore[call-overload]


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


def json_entities_and_put(handle: ManifestHandle) -> UserDefinedFunctionLike:
    """`json_entities` and `manifest_put` in one call: a UDF (contexts, unstruct, derived,
    event_id, fingerprint, wanted, etl_seconds) -> (errors, entities, put) that puts each wanted
    row whose JSON columns are valid. One trip to Python instead of two for the shred job's
    lines whose id is on no other line; non-deterministic, as `manifest_put`."""

    def checked_and_put(
        contexts: pa.Array,
        unstruct: pa.Array,
        derived: pa.Array,
        event_ids: pa.Array,
        fingerprints: pa.Array,
        wanted: pa.Array,
        etl_seconds: pa.Array,
    ) -> pa.Array:
        found: pa.StructArray = _entities(contexts, unstruct, derived)
        valid_json = pc.equal(pc.list_value_length(found.field("errors")), 0)
        put = _put(handle, event_ids, fingerprints, pc.and_(wanted, valid_json), etl_seconds)
        parts = [found.field("errors"), found.field("entities"), put]
        return pa.StructArray.from_arrays(parts, names=["errors", "entities", "put"])

    udf: UserDefinedFunctionLike = arrow_udf(checked_and_put, ENTITIES_AND_PUT_TYPE)  # type: ignore[call-overload]
    return udf.asNondeterministic()


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
