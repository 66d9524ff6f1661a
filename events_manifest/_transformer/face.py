"""What the glue takes of the transformer's engine: configs, the parse and decide steps, the run flow
and its commit, the stream's windows and Kinesis input, the output's types, what a run reports. The
glue (`spark_integration`) imports the area through this face alone (`tests/core/test_layers.py`)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from events_manifest._transformer.stream.pubsub_input import (
        PubsubInputError,
        Stager,
        check_subscription,
        staged_folder,
    )
    from events_manifest._transformer.stream.read_files import ReadFiles
    from events_manifest._transformer.stream.stream_config import StreamConfig, StreamSource, last_offset
    from events_manifest._transformer.stream.window_flow import WindowFlow
    from events_manifest._transformer.stream.windows import ForwardClock, WindowBook

_EXPORTS = {
    "BAD": "events_manifest._transformer.parse_decide",
    "CANONICAL_ID": "events_manifest._transformer.decode.event",
    "CANONICAL_TIMESTAMP": "events_manifest._transformer.decode.event",
    "COMPLETE": "events_manifest._transformer.run.commit",
    "DATA": "events_manifest._transformer.run.commit",
    "Decide": "events_manifest._transformer.parse_decide",
    "EntityType": "events_manifest._transformer.output.entity_types",
    "ForwardClock": "events_manifest._transformer.stream.windows",
    "GOOD": "events_manifest._transformer.parse_decide",
    "KinesisInput": "events_manifest._transformer.stream.kinesis_input",
    "KinesisInputError": "events_manifest._transformer.stream.kinesis_input",
    "KinesisStreamMissing": "events_manifest._transformer.stream.kinesis_input",
    "LENIENT_ID": "events_manifest._transformer.decode.event",
    "LENIENT_TIMESTAMP": "events_manifest._transformer.decode.event",
    "META": "events_manifest._transformer.parse_decide",
    "NANOS": "events_manifest._transformer.decode.jvm",
    "Offsets": "events_manifest._transformer.stream.kinesis_input",
    "PARSED": "events_manifest._transformer.parse_decide",
    "PARTITIONS": "events_manifest._transformer.output.shred_mode",
    "ParquetColumns": "events_manifest._transformer.output.parquet",
    "Parse": "events_manifest._transformer.parse_decide",
    "Progress": "events_manifest._transformer.run.run_flow",
    "PubsubInputError": "events_manifest._transformer.stream.pubsub_input",
    "ReadFiles": "events_manifest._transformer.stream.read_files",
    "Reporter": "events_manifest._transformer.run.metrics",
    "RunCounts": "events_manifest._transformer.run.commit",
    "RunResult": "events_manifest._transformer.run.run_flow",
    "ShardRange": "events_manifest._transformer.stream.kinesis_input",
    "ShardReader": "events_manifest._transformer.stream.kinesis_input",
    "Shred": "events_manifest._transformer.output.formats",
    "ShredModeLines": "events_manifest._transformer.output.shred_mode",
    "Stager": "events_manifest._transformer.stream.pubsub_input",
    "StreamConfig": "events_manifest._transformer.stream.stream_config",
    "StreamSource": "events_manifest._transformer.stream.stream_config",
    "TIMESTAMP": "events_manifest._transformer.output.parquet_types",
    "TransformerConfig": "events_manifest._transformer.config",
    "TransformerConfigError": "events_manifest._transformer.config",
    "TransformerJob": "events_manifest._transformer.run.job",
    "WideRowJson": "events_manifest._transformer.output.formats",
    "WideRowParquet": "events_manifest._transformer.output.formats",
    "WindowBook": "events_manifest._transformer.stream.windows",
    "WindowFlow": "events_manifest._transformer.stream.window_flow",
    "build_columns": "events_manifest._transformer.output.parquet",
    "check_subscription": "events_manifest._transformer.stream.pubsub_input",
    "kinesis": "events_manifest._transformer.run.kinesis",
    "last_offset": "events_manifest._transformer.stream.stream_config",
    "pinned": "events_manifest._transformer.stream.kinesis_input",
    "pubsub": "events_manifest._transformer.run.pubsub",
    "run_all": "events_manifest._transformer.run.run_flow",
    "second_of": "events_manifest._transformer.decode.event",
    "sentry_of": "events_manifest._transformer.run.sentry",
    "staged_folder": "events_manifest._transformer.stream.pubsub_input",
}
"""Where each name of the face is defined (a module, for `kinesis` and `pubsub`): imported at its
first use, so that a process that needs a few names (the Kinesis data source's, which Spark starts
for a stream's reads) imports their modules alone."""

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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(_EXPORTS[name])
    value = module if module.__name__.endswith(f".{name}") else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
