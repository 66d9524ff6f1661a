"""What the glue takes of the transformer's engine: configs, the parse and decide steps, the run flow
and its commit, the stream's windows and Kinesis input, the output's types, what a run reports. The
glue (`spark_integration`) imports the area through this face alone (`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._transformer.config import TransformerConfig, TransformerConfigError
from events_manifest._transformer.decode.event import (
    CANONICAL_ID,
    CANONICAL_TIMESTAMP,
    LENIENT_ID,
    LENIENT_TIMESTAMP,
    second_of,
)
from events_manifest._transformer.decode.jvm import NANOS
from events_manifest._transformer.output.entity_types import EntityType
from events_manifest._transformer.output.formats import Shred, WideRowJson, WideRowParquet
from events_manifest._transformer.output.parquet import ParquetColumns, build_columns
from events_manifest._transformer.output.parquet_types import TIMESTAMP
from events_manifest._transformer.output.shred_mode import PARTITIONS, ShredModeLines
from events_manifest._transformer.parse_decide import BAD, GOOD, META, PARSED, Decide, Parse
from events_manifest._transformer.run import kinesis, pubsub
from events_manifest._transformer.run.commit import COMPLETE, DATA, RunCounts
from events_manifest._transformer.run.job import TransformerJob
from events_manifest._transformer.run.metrics import Reporter
from events_manifest._transformer.run.run_flow import Progress, RunResult, run_all
from events_manifest._transformer.run.sentry import sentry_of
from events_manifest._transformer.stream.kinesis_input import (
    KinesisInput,
    KinesisInputError,
    KinesisStreamMissing,
    Offsets,
    ShardRange,
    ShardReader,
    pinned,
)
from events_manifest._transformer.stream.pubsub_input import PubsubInputError, Stager, check_subscription, staged_folder
from events_manifest._transformer.stream.read_files import ReadFiles
from events_manifest._transformer.stream.stream_config import StreamConfig, StreamSource, last_offset
from events_manifest._transformer.stream.window_flow import WindowFlow
from events_manifest._transformer.stream.windows import ForwardClock, WindowBook

__all__ = [
    "BAD",
    "CANONICAL_ID",
    "CANONICAL_TIMESTAMP",
    "COMPLETE",
    "DATA",
    "Decide",
    "EntityType",
    "ForwardClock",
    "GOOD",
    "KinesisInput",
    "KinesisInputError",
    "KinesisStreamMissing",
    "LENIENT_ID",
    "LENIENT_TIMESTAMP",
    "META",
    "NANOS",
    "Offsets",
    "PARSED",
    "PARTITIONS",
    "ParquetColumns",
    "Parse",
    "Progress",
    "PubsubInputError",
    "ReadFiles",
    "Reporter",
    "RunCounts",
    "RunResult",
    "ShardRange",
    "ShardReader",
    "Shred",
    "ShredModeLines",
    "Stager",
    "StreamConfig",
    "StreamSource",
    "TIMESTAMP",
    "TransformerConfig",
    "TransformerConfigError",
    "TransformerJob",
    "WideRowJson",
    "WideRowParquet",
    "WindowBook",
    "WindowFlow",
    "build_columns",
    "check_subscription",
    "kinesis",
    "pubsub",
    "last_offset",
    "pinned",
    "run_all",
    "second_of",
    "staged_folder",
    "sentry_of",
]
