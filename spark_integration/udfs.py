"""The places where Spark hands rows to Python, one Arrow batch at a time.

- `checked_lines`: split and check enriched lines (`fields`), validate their JSON columns and cut
  out their entities byte for byte (`sdj`);
- `shred_unshared`: for lines whose id is on no other line, all of it in one trip: the checks,
  the manifest put, the decision and every output line (`lines`);
- `manifest_put`: one `try_put_many` call per batch against the manifest;
- `manifest_taken`: which kept events an earlier batch stored with another fingerprint;
- `lines_of`: the output lines of events Spark has decided.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.functions import arrow_udf
from pyspark.sql.pandas.types import from_arrow_schema

from events_manifest import ManifestError
from events_manifest.model import from_epoch_seconds
from spark_integration import fields, lines
from spark_integration.manifest_handle import ManifestHandle
from spark_integration.sdj import Found, IgluParts, read_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
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
LINES_TYPE = from_arrow_schema(lines.LINES_SCHEMA)
"""`lines.LINES_SCHEMA` for Spark: what `shred_unshared` and `lines_of` return."""

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


def _checked_struct(texts: pa.Array) -> pa.Array:  # the hint tells Spark: scalar
    return _struct(_checked(texts))


def _struct(columns: dict[str, pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(list(columns.values()), names=list(columns))


checked_lines: UserDefinedFunctionLike = arrow_udf(_checked_struct, LINE_TYPE)  # type: ignore[call-overload]


def _put(
    handle: ManifestHandle, event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array | int
) -> pa.StructArray:
    """(accepted, error) of each wanted row, put in one `try_put_many` call with its etl time (one
    for the batch, or each row's); nulls elsewhere."""
    ids, fingerprint_list = event_ids.to_pylist(), fingerprints.to_pylist()
    positions = lines.rows_where(wanted).tolist()
    accepted: list[bool | None] = [None] * len(ids)
    errors: list[str | None] = [None] * len(ids)
    if positions:
        etls = etl_seconds.to_pylist() if isinstance(etl_seconds, pa.Array) else [etl_seconds] * len(ids)
        times = {s: from_epoch_seconds(s) for s in {etls[i] for i in positions}}
        items = [(ids[i], fingerprint_list[i], times[etls[i]]) for i in positions]
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


def _taken(
    handle: ManifestHandle, event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: int
) -> pa.Array:
    """Whether an earlier batch (etl before this one's, entry not expired) stored each wanted
    row's id with another fingerprint; null on the other rows."""
    ids, fingerprint_list = event_ids.to_pylist(), fingerprints.to_pylist()
    positions = lines.rows_where(wanted).tolist()
    answers: list[bool | None] = [None] * len(ids)
    if positions:
        stored = handle.open().entries_of(ids[i] for i in positions)
        for i in positions:
            answers[i] = any(
                e.fingerprint != fingerprint_list[i] and e.etl_seconds < etl_seconds < e.ttl_seconds
                for e in stored[ids[i]]
            )
    return pa.array(answers, type=pa.bool_())


def manifest_taken(handle: ManifestHandle, etl_seconds: int) -> UserDefinedFunctionLike:
    """A UDF (event_id, fingerprint, wanted) -> bool: `_taken` of each wanted row."""

    def taken(event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array) -> pa.Array:
        return _taken(handle, event_ids, fingerprints, wanted, etl_seconds)

    udf: UserDefinedFunctionLike = arrow_udf(taken, T.BooleanType())  # type: ignore[call-overload]
    return udf.asNondeterministic()


def missing_fingerprint(etl_seconds: int) -> str:
    """What a missing fingerprint is derived from, before the event's rank among its id's
    fingerprint-less events (see `dedup.filled_fingerprint`)."""
    return f"missing-fingerprint:{etl_seconds}:"


def _filled(event_ids: pa.Array, fingerprints: pa.Array, valid: pa.Array, etl_seconds: int) -> pa.Array:
    """Missing fingerprints of valid lines filled as `dedup.filled_fingerprint` fills an event's
    first: a UUID v5 of its id and `missing_fingerprint(etl) + "1"`."""
    missing = lines.rows_where(pc.and_(valid, pc.equal(fingerprints, ""))).tolist()
    if not missing:
        return fingerprints
    filled = fingerprints.to_pylist()
    name = missing_fingerprint(etl_seconds) + "1"
    for row in missing:
        filled[row] = str(uuid.uuid5(uuid.UUID(event_ids[row].as_py()), name))
    return pa.array(filled, pa.string())


def new_event_id(event_id: str, fingerprint: str, *, random_id: bool) -> str:
    """A synthetic duplicate's new id: UUID v5 of its id and fingerprint, as `dedup.uuid5` makes
    it in Spark, or v4 with `random_id`."""
    return str(uuid.uuid4() if random_id else uuid.uuid5(uuid.UUID(event_id), fingerprint))


@attrs.frozen
class Unshared:
    """How `shred_unshared` decides the lines whose id is on no other line of the batch."""

    manifest: ManifestHandle | None
    etl_seconds: int
    failure_tstamp: str
    cross_batch_synthetic: bool = False
    random_ids: bool = False

    def decide(self, checked: dict[str, pa.Array]) -> dict[str, pa.Array]:
        """`lines.DECIDED_COLUMNS` of checked lines (`LINE_TYPE`): each is first of its pair and
        of its id, so valid lines are kept unless the manifest refuses them (or fails to answer)."""
        valid = pc.equal(pc.list_value_length(checked["errors"]), 0)
        event_ids = checked["event_id"]
        status = pc.if_else(valid, lines.KEPT, lines.BAD)
        errors = checked["errors"]
        synthetic = pa.array(np.zeros(len(valid), dtype=bool))
        new_ids = event_ids
        if self.manifest is not None:
            fingerprints = _filled(event_ids, checked["fingerprint"], valid, self.etl_seconds)
            put = _put(self.manifest, event_ids, fingerprints, valid, self.etl_seconds)
            failed = pc.is_valid(put.field("error"))
            status = pc.if_else(failed, lines.MANIFEST_ERROR, status)
            status = pc.if_else(pc.invert(pc.fill_null(put.field("accepted"), True)), lines.CROSS_BATCH, status)
            if pc.any(failed).as_py():
                listed = [
                    [error] if error is not None else messages
                    for error, messages in zip(put.field("error").to_pylist(), errors.to_pylist(), strict=True)
                ]
                errors = pa.array(listed, errors.type)
            if self.cross_batch_synthetic:
                synthetic = pc.fill_null(
                    _taken(self.manifest, event_ids, fingerprints, pc.equal(status, lines.KEPT), self.etl_seconds),
                    False,
                )
                new_ids = self._new_ids(event_ids, fingerprints, synthetic)
        synthetic = pc.if_else(pc.equal(status, lines.KEPT), synthetic, pa.scalar(None, pa.bool_()))
        return {
            **checked,
            "status": status,
            "new_event_id": new_ids,
            "synthetic": synthetic,
            "synthetic_across": synthetic,
            "id_events": pc.if_else(valid, 1, pa.scalar(None, pa.int64())),
            "id_first": valid,
            "errors": errors,
        }

    def _new_ids(self, event_ids: pa.Array, fingerprints: pa.Array, synthetic: pa.Array) -> pa.Array:
        rows = lines.rows_where(synthetic).tolist()
        if not rows:
            return event_ids
        ids, fingerprint_list = event_ids.to_pylist(), fingerprints.to_pylist()
        for row in rows:
            ids[row] = new_event_id(ids[row], fingerprint_list[row], random_id=self.random_ids)
        return pa.array(ids, pa.string())

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            checked = _checked(batch.column("line"))
            checked["line"] = batch.column("line")
            yield from lines.output_lines(self.decide(checked), self.failure_tstamp)


def shred_unshared(batch_lines: DataFrame, decision: Unshared) -> DataFrame:
    """The output lines (`LINES_TYPE`) of lines (column `line`) whose id is on no other line of the
    batch, each checked, put, decided and written out in one trip to Python where it is read.

    A plan node of its own, so Spark calls it once per line; a retried task puts its lines again
    with the same etl time, and they are accepted again: retries are safe.
    """
    return batch_lines.select("line").mapInArrow(decision, LINES_TYPE)


def lines_of(decided: DataFrame, failure_tstamp: str) -> DataFrame:
    """The output lines (`LINES_TYPE`) of events Spark has decided (`lines.DECIDED_COLUMNS`)."""

    def build(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from lines.output_lines({name: batch.column(name) for name in lines.DECIDED_COLUMNS}, failure_tstamp)

    return decided.select(*lines.DECIDED_COLUMNS).mapInArrow(build, LINES_TYPE)
