"""The Kinesis input of the stream transformer as a Python data source of Spark's (4.0 and newer):
a stream reader whose offsets Spark keeps in its checkpoint. The driver cuts each micro-batch
(`ShardReader.latest`) and one task a shard reads it (`ShardReader.records`), both the core's
(`events_manifest._transformer.stream.kinesis_input`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from events_manifest._transformer.face import KinesisInput, Offsets, ShardRange, ShardReader

NAME = "events_manifest_kinesis"
SOURCE = "source"
"""The option holding the input's settings, as JSON."""


def kinesis_lines(spark: SparkSession, source: KinesisInput) -> DataFrame:
    """The stream of the input's user records, a column `value` (their bytes, unchecked: a record
    that is not UTF-8 becomes a bad row downstream, as a file's line does)."""
    spark.dataSource.register(KinesisDataSource)
    return spark.readStream.format(NAME).option(SOURCE, json.dumps(source.to_dict())).load()


class KinesisDataSource(DataSource):
    """`spark.readStream.format("events_manifest_kinesis").option("source", json)`: a column `value`,
    each user record's bytes."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return "value binary"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KinesisStreamReader(KinesisInput.from_dict(json.loads(self.options[SOURCE])))


class ShardPartition(InputPartition):
    """One shard's range of a micro-batch: one task."""

    def __init__(self, part: ShardRange) -> None:
        super().__init__(part.shard)
        self.part = part


class KinesisStreamReader(DataSourceStreamReader):
    """Spark's calls, each one of `ShardReader`'s. Spark 4.2 and newer give `latestOffset` the
    batch's start; 4.0 and 4.1 do not, so the reader keeps the end it last gave or was planned."""

    def __init__(self, source: KinesisInput) -> None:
        self.source = source
        self._shards: ShardReader | None = None
        self._initial: Offsets | None = None
        self._position: Offsets | None = None

    @property
    def shards(self) -> ShardReader:
        if self._shards is None:
            self._shards = ShardReader(self.source)
        return self._shards

    def initialOffset(self) -> Offsets:
        if self._initial is None:
            self._initial = self.shards.initial()  # `LATEST` pinned once
        return self._initial

    def latestOffset(self, start: Offsets | None = None, limit: Any = None) -> Offsets:
        self._position = self.shards.latest(start or self._position or self.initialOffset())
        return self._position

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        self._position = end
        return [ShardPartition(part) for part in self.shards.ranges(start, end)]

    def read(self, partition: InputPartition) -> Iterator[tuple[bytes]]:
        assert isinstance(partition, ShardPartition)
        return ((record,) for record in ShardReader(self.source).records(partition.part))

    def commit(self, end: Offsets) -> None:
        """Nothing to keep: Spark's checkpoint holds the offsets."""
        self._position = self._position or end

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "_shards": None, "_initial": None, "_position": None}
