"""The places where Spark hands rows to the core's engine, one Arrow batch at a time.

- `checked_lines`: enriched lines checked (`events_manifest._snowplow.batch.check`), a column `checked`;
- `shred_lines` and `shred_grouped`: the two paths of the shred job's lines, lines of ids found once
  as they are read, lines of shared ids after a shuffle, both through the engine's `Shred`: the
  checks, the decisions and every output line in one trip;
- `manifest_put`: one `try_put_many` call per batch against the manifest (the populator), a
  column `put`.

The columns are added through `_spark.api.with_arrow_column`, which picks the running Spark's
fastest way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from events_manifest._opening.face import ManifestHandle
from events_manifest._snowplow.face import Shred, batch, dedup, shred_output
from events_manifest.iglu import ResolverConfig
from spark_integration._spark.api import spark_schema, with_arrow_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LINE_TYPE = spark_schema(batch.CHECKED)
"""What `checked_lines` adds to each line (`events_manifest._snowplow.batch.CHECKED`)."""
PUT_TYPE = T.StructType([T.StructField("accepted", T.BooleanType()), T.StructField("error", T.StringType())])
LINES_TYPE = spark_schema(shred_output.LINES_SCHEMA)
"""`shred_output.LINES_SCHEMA` for Spark: what `shred_lines` and `shred_grouped` return."""


def _struct(columns: dict[str, pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(list(columns.values()), names=list(columns))


def checked_lines(lines: DataFrame, iglu: ResolverConfig | None = None) -> DataFrame:
    """`lines` (column `line`) with a column `checked` (`LINE_TYPE`): `batch.check` of each batch."""

    def check(texts: pa.Array) -> pa.Array:
        return _struct(batch.check(texts, iglu))

    return with_arrow_column(lines, "checked", check, ["line"], LINE_TYPE)


def _put(
    handle: ManifestHandle, event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array
) -> pa.StructArray:
    accepted, errors = dedup.put_all(
        handle, event_ids, fingerprints, pc.fill_null(wanted, False).to_numpy(zero_copy_only=False), etl_seconds
    )
    return pa.StructArray.from_arrays(
        [pa.array(accepted, type=pa.bool_()), pa.array(errors, type=pa.string())], names=["accepted", "error"]
    )


def manifest_put(rows: DataFrame, handle: ManifestHandle) -> DataFrame:
    """`rows` (columns `event_id`, `fingerprint`, `wanted`, `etl_seconds`) with a column `put`
    (`PUT_TYPE`: accepted, error) of their wanted rows put (`dedup.put_all`), for the populator.

    Non-deterministic, so Spark never computes it twice for a row; if a task is retried, its puts
    are repeated with the same etl time and so accepted again: retries are safe.
    """

    def put(event_ids: pa.Array, fingerprints: pa.Array, wanted: pa.Array, etl_seconds: pa.Array) -> pa.Array:
        return _put(handle, event_ids, fingerprints, wanted, etl_seconds)

    arguments = ["event_id", "fingerprint", "wanted", "etl_seconds"]
    return with_arrow_column(rows, "put", put, arguments, PUT_TYPE, deterministic=False)


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
