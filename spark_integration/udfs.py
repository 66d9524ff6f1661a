"""The places where Spark hands rows to Python, one Arrow batch at a time.

- `checked_lines`: split and check enriched lines (`fields`), validate their JSON columns and cut
  out their entities byte for byte (`sdj`), and with a resolver configuration validate each
  entity against its schema (`events_manifest.iglu`);
- `shred_lines` and `shred_grouped`: the two paths of the shred job's lines, lines of ids found once
  as they are read, lines of shared ids after a shuffle, both through `Shred`: the checks, the
  decisions (`dedup`) and every output line (`lines`) in one trip;
- `manifest_put`: one `try_put_many` call per batch against the manifest;
- `record_hashes`: the generic dedup's default fingerprint of whole rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.functions import arrow_udf
from pyspark.sql.pandas.types import from_arrow_schema

from events_manifest.dedup import canonical_hash
from events_manifest.iglu import ResolverConfig, SchemaKey, resolver_for
from spark_integration import bad_rows, dedup, fields, lines
from spark_integration.dedup import Dedup
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
"""`lines.LINES_SCHEMA` for Spark: what `shred_lines` and `shred_grouped` return."""

_ENTITY_ARROW = pa.struct([(name, pa.string()) for name in ("vendor", "name", "format", "version", "data")])


def _checked(lines: pa.Array, iglu: ResolverConfig | None = None) -> dict[str, pa.Array]:
    """The columns of `LINE_TYPE` for a batch of lines: their fields, their JSON columns, and with
    an `iglu` resolver configuration their entities against their schemas."""
    found = fields.split_and_check(lines)
    sdjs = read_rows(*(column.to_pylist() for column in found.json))
    return {
        "event_id": found.event_id,
        "fingerprint": found.fingerprint,
        "collector_tstamp": found.collector_tstamp,
        "etl_us": found.etl_us,
        "collector_us": found.collector_us,
        "errors": _errors(len(lines), found.errors, sdjs, _schema_errors(sdjs, iglu) if iglu is not None else {}),
        "entities": _entities(sdjs),
        "atomic_before": found.atomic_before,
        "atomic_after": found.atomic_after,
    }


def any_valid(texts: list[str], iglu: ResolverConfig | None = None) -> bool:
    """Whether any of these lines passes every check (`_checked`), for the driver."""
    return bool(bad_rows.without_messages(_checked(pa.array(texts, pa.string()), iglu)["errors"]).any())


def _schema_errors(found: Found, iglu: ResolverConfig) -> dict[int, list[str]]:
    """Each line's messages for its entities that fail their schemas (none for a valid line)."""
    resolver = resolver_for(iglu)
    failing: dict[int, list[str]] = {}
    start = 0
    for row, end in enumerate(found.entity_ends):
        for parts, data in zip(found.parts[start:end], found.data[start:end], strict=True):
            messages = resolver.validate_data(SchemaKey(*parts), json.loads(data))
            if messages:
                failing.setdefault(row, []).extend(messages)
        start = end
    return failing


def _entities(found: Found) -> pa.ListArray:
    distinct: dict[IgluParts, int] = {}
    schema_of = pa.array([distinct.setdefault(iglu, len(distinct)) for iglu in found.parts], pa.int32())
    parts = zip(*distinct, strict=True) if distinct else [()] * 4
    columns = [pa.array(part, pa.string()).take(schema_of) for part in parts]
    data = pa.array(found.data, pa.binary()).cast(pa.string())  # UTF-8 already checked
    return _lists(found.entity_ends, pa.StructArray.from_arrays([*columns, data], fields=list(_ENTITY_ARROW)))


def _errors(rows: int, of_fields: dict[int, list[str]], found: Found, of_schemas: dict[int, list[str]]) -> pa.ListArray:
    """Each line's field messages, then its JSON messages, then its schema messages; Python only
    for lines that have any."""
    json_ends = np.array([0, *found.error_ends], dtype=np.int64)
    counts = np.diff(json_ends)
    for row, listed in (*of_fields.items(), *of_schemas.items()):
        counts[row] += len(listed)
    messages: list[str] = []
    for row in np.flatnonzero(counts).tolist():
        messages += of_fields.get(row, ())
        messages += found.errors[json_ends[row] : json_ends[row + 1]]
        messages += of_schemas.get(row, ())
    return _lists(np.cumsum(counts).tolist(), pa.array(messages, pa.string()))


def _lists(ends: list[int], values: pa.Array) -> pa.ListArray:
    """Row i of the result holds `values[ends[i-1]:ends[i]]`."""
    return pa.ListArray.from_arrays(pa.array([0, *ends], pa.int32()), values)


def _struct(columns: dict[str, pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(list(columns.values()), names=list(columns))


def checked_lines(iglu: ResolverConfig | None = None) -> UserDefinedFunctionLike:
    """A UDF (line) -> `LINE_TYPE`: `_checked`, one Arrow batch at a time."""

    def check(texts: pa.Array) -> pa.Array:  # the hint tells Spark: scalar
        return _struct(_checked(texts, iglu))

    udf: UserDefinedFunctionLike = arrow_udf(check, LINE_TYPE)  # type: ignore[call-overload]
    return udf


def _put(
    handle: ManifestHandle, event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array
) -> pa.StructArray:
    accepted, errors = dedup.put_all(
        handle, event_ids, fingerprints, pc.fill_null(wanted, False).to_numpy(zero_copy_only=False), etl_seconds
    )
    return pa.StructArray.from_arrays(
        [pa.array(accepted, type=pa.bool_()), pa.array(errors, type=pa.string())], names=["accepted", "error"]
    )


def manifest_put(handle: ManifestHandle) -> UserDefinedFunctionLike:
    """A UDF (event_id, fingerprint, wanted, etl_seconds) -> (accepted, error) that puts the wanted
    rows (`dedup.put_all`), for the populator and the generic dedup.

    Marked non-deterministic so Spark never duplicates the call in a plan; if a task is retried,
    its puts are repeated with the same etl time and so accepted again: retries are safe.
    """

    def put(event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array) -> pa.Array:
        return _put(handle, event_ids, fingerprints, wanted, etl_seconds)

    udf: UserDefinedFunctionLike = arrow_udf(put, PUT_TYPE)  # type: ignore[call-overload]
    return udf.asNondeterministic()


def _record_hashes(rows: pa.Array) -> pa.Array:
    return pa.array([canonical_hash(row) for row in rows.to_pylist()], pa.string())


record_hashes: UserDefinedFunctionLike = arrow_udf(_record_hashes, T.StringType())  # type: ignore[call-overload]
"""A UDF (struct of a row's columns) -> `events_manifest.dedup.canonical_hash` of the row as a
dict: the generic dedup's default fingerprint, the plain-Python deduplicator's own."""


@attrs.frozen
class Shred:
    """The one way the job turns lines into output lines, whichever path brings them: each batch
    checked (`fields`, `sdj`), decided (`dedup.Dedup`) and written out (`lines`)."""

    dedup: Dedup
    failure_tstamp: str
    iglu: ResolverConfig | None = None

    def lines_of(self, batch_lines: pa.Array) -> list[pa.RecordBatch]:
        """The output lines of a batch of input lines holding every line of each of their ids."""
        checked = _checked(batch_lines, self.iglu)
        checked["line"] = batch_lines
        return lines.output_lines(self.dedup.decide(checked), self.failure_tstamp)

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Lines whose id is on no other line of the batch, as they are read."""
        for batch in batches:
            yield from self.lines_of(batch.column("line"))

    def grouped(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Lines sorted by `key` (see `enriched.event_key`), then input order: each batch is
        decided up to its last key, whose lines go with the next batch, so that every line of an
        id is decided in one call."""
        held: pa.RecordBatch | None = None
        for batch in batches:
            if held is not None:
                batch = pa.Table.from_batches([held, batch]).combine_chunks().to_batches()[0]
            keys = batch.column("key").to_numpy()
            cut = int(np.searchsorted(keys, keys[-1])) if len(keys) else 0
            if cut:
                yield from self.lines_of(batch.column("line").slice(0, cut))
            held = batch.slice(cut)
        if held is not None and len(held):
            yield from self.lines_of(held.column("line"))


def shred_lines(batch_lines: DataFrame, shred: Shred) -> DataFrame:
    """The output lines (`LINES_TYPE`) of lines (column `line`) whose id is on no other line of the
    batch, each checked, put, decided and written out in one trip to Python where it is read.

    A plan node of its own, so Spark calls it once per line; a retried task puts its lines again
    with the same etl time, and they are accepted again: retries are safe.
    """
    return batch_lines.select("line").mapInArrow(shred, LINES_TYPE)


def shred_grouped(keyed_lines: DataFrame, shred: Shred) -> DataFrame:
    """The output lines of lines (columns `line`, `key`, `file`, `position`) brought together by
    key in one shuffle and sorted in input order within it, each id's lines decided together."""
    together = keyed_lines.repartition("key").sortWithinPartitions("key", "file", "position")
    return together.select("key", "line").mapInArrow(shred.grouped, LINES_TYPE)
