"""The Kinesis input of the stream transformer as a Python data source of Spark's (4.0 and newer):
a simple stream reader whose offsets Spark keeps in its checkpoint; the reading itself is the
core's (`events_manifest._transformer.kinesis_input`), on the driver's side, a thread a shard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.types import StructType

from events_manifest._transformer.kinesis_input import KinesisInput, ShardReader

NAME = "events_manifest_kinesis"
SOURCE = "source"
"""The option holding the input's settings, as JSON."""


def kinesis_lines(spark: SparkSession, source: KinesisInput) -> DataFrame:
    """The stream of the input's user records, a column `value` (their bytes as text, unchecked:
    a record that is not UTF-8 becomes a bad row downstream, as a file's line does)."""
    spark.dataSource.register(KinesisDataSource)
    reader = spark.readStream.format(NAME).option(SOURCE, json.dumps(source.to_dict()))
    return reader.load().select(F.col("value").cast("string").alias("value"))


class KinesisDataSource(DataSource):
    """`spark.readStream.format("events_manifest_kinesis").option("source", json)`: a column `value`,
    each user record's bytes."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return "value binary"

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return KinesisStreamReader(KinesisInput.from_dict(json.loads(self.options[SOURCE])))


class KinesisStreamReader(SimpleDataSourceStreamReader):
    """Spark's calls, each one of `ShardReader`'s."""

    def __init__(self, source: KinesisInput) -> None:
        self.shards = ShardReader(source)

    def initialOffset(self) -> dict[str, Any]:
        return self.shards.initial()

    def read(self, start: dict[str, Any]) -> tuple[Iterator[tuple[bytes]], dict[str, Any]]:
        records, end = self.shards.read(start)
        return iter([(record,) for record in records]), end

    def readBetweenOffsets(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[tuple[bytes]]:
        return iter([(record,) for record in self.shards.between(start, end)])

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets."""
