"""The stream transformer's config: the reference stream transformer's HOCON (`input`, `output`,
`windowing`, `queue`, `formats`, `validations`, `featureFlags`, `monitoring`, `telemetry`) with
the batch job's `deduplication` section (docs/stream-transformer.md). Everything a window's run
needs is the batch job's `TransformerConfig`, checked by the batch job's rules."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs

from events_manifest._aws import default_region
from events_manifest._jobs.storage import Storage, join
from events_manifest._transformer.config import (
    DEFAULTS,
    TransformerConfig,
    TransformerConfigError,
    check_known_region,
    duration,
    merged,
    pubsub_misnamed,
)
from events_manifest._transformer.decode.event import parse_instant
from events_manifest._transformer.stream.kinesis_input import KinesisInput
from events_manifest._transformer.stream.pubsub_input import PubsubInput, staged_folder

STREAM_DEFAULTS = (
    DEFAULTS
    + """
windowing = 10 minutes
trigger = 10 seconds
formats { transformationType = widerow }
monitoring.metrics.stdout { period = 1 minute, prefix = "snowplow.transformer." }
"""
)
"""The batch job's defaults, and the stream transformer's own (its application.conf): ten-minute
windows of wide rows, the metrics on stdout every minute (`monitoring.metrics.stdout = null`: none).
An input without a `type` is read by `_source`: a folder, or the reference's GCP input."""

INPUTS = ("file", "kafka", "kinesis", "pubsub")


@attrs.frozen
class StreamSource:
    """Where the stream's enriched lines come from: a folder (Spark's file source) or a Kafka topic."""

    type: str
    path: str = ""
    """The folder, for `file`."""
    topic: str = ""
    bootstrap_servers: str = ""
    options: tuple[tuple[str, str], ...] = ()
    """Kafka consumer settings (`consumerConf`), passed to Spark's Kafka source as `kafka.*` options."""
    kinesis: KinesisInput | None = None
    pubsub: PubsubInput | None = None

    def describe(self) -> str:
        if self.kinesis is not None:
            return self.kinesis.describe()
        if self.pubsub is not None:
            return self.pubsub.describe()
        return f"folder {self.path}" if self.type == "file" else f"Kafka topic {self.topic} at {self.bootstrap_servers}"

    def check_checkpoint(self, storage: Storage, offsets: str, checkpoint: str) -> None:
        """Refuse a checkpoint whose last offset (Spark's log in the folder `offsets`) another kind
        of input wrote: its positions mean nothing to this one, and a start would stop on them."""
        found = last_offset(storage, offsets)
        written = offset_input(found) if found is not None else None
        if written == "file" and storage.exists(staged_folder(checkpoint)):
            written = "pubsub"  # the file source over the subscription's staged messages
        if written is not None and written != self.type:
            raise TransformerConfigError(
                f"checkpoint [{checkpoint}] holds the positions of {INPUT_WORDS[written]}, and this config reads "
                f"{self.describe()}: give this input an output.path of its own (its checkpoint goes there); "
                "nothing was written"
            )


INPUT_WORDS = {
    "file": "a folder's files",
    "kinesis": "a Kinesis stream's shards",
    "kafka": "a Kafka topic's partitions",
    "pubsub": "a Pub/Sub subscription's staged messages",
}


def last_offset(storage: Storage, offsets: str) -> str | None:
    """The source's offset in the last entry of Spark's offset log (the folder `offsets`), as Spark
    wrote it; None before the first micro-batch."""
    batches = [int(name) for name in storage.children(offsets) if name.isdigit()] if storage.exists(offsets) else []
    if not batches:
        return None
    lines = storage.read_text(join(offsets, str(max(batches)))).splitlines()
    return lines[2] if len(lines) > 2 else None


def offset_input(offset: str) -> str | None:
    """The kind of input whose Spark offset this is (`file`, `kinesis`, `kafka`), or None if unknown."""
    try:
        found = json.loads(offset)
    except ValueError:
        return None
    if not isinstance(found, dict) or not found:
        return None
    if "logOffset" in found:
        return "file"
    if "shards" in found:
        return "kinesis"
    return "kafka" if all(isinstance(partitions, dict) for partitions in found.values()) else None


@attrs.frozen
class StreamConfig:
    """The stream transformer's settings: its source, its windows, and the batch job's settings
    that each window's run takes (`run`, whose `input` is set by the job to the staged lines)."""

    source: StreamSource
    window_seconds: int
    run: TransformerConfig
    trigger_seconds: float = 10.0
    """How often a micro-batch reads what arrived (ours: the reference's sources push)."""

    @property
    def output(self) -> str:
        return self.run.output

    def check_supported(self, *, manifest: bool, iglu: bool) -> None:
        """The batch job's refusals (`TransformerConfig.check_supported`): each window is one of its runs."""
        self.run.check_supported(manifest=manifest, iglu=iglu)

    @classmethod
    def parse(cls, text: str, environment: Mapping[str, str] | None = None) -> StreamConfig:
        env = os.environ if environment is None else environment
        tree = merged(text, STREAM_DEFAULTS)
        source = _source(tree.get("input"))
        if tree.get("runInterval") is not None:
            raise TransformerConfigError(
                "runInterval is the batch transformer's: the stream transformer takes what arrives. Remove it"
            )
        window = duration(tree.get("windowing"), "windowing")
        seconds = window.total_seconds()
        if seconds < 1 or seconds != int(seconds) or 86400 % int(seconds):
            raise TransformerConfigError(
                f"DecodingFailure at .windowing: {seconds:g} seconds does not divide a day in whole seconds; "
                "choose a window such as 1 minute, 5 minutes, 10 minutes or 1 hour"
            )
        trigger = duration(tree.get("trigger"), "trigger").total_seconds()
        if not 0.1 <= trigger <= seconds:
            raise TransformerConfigError(
                f"DecodingFailure at .trigger: {trigger:g} seconds; give from 100 milliseconds to the window's length"
            )
        run = TransformerConfig.of_tree({**tree, "input": "<the stream's staged lines>"}, env)
        return cls(source, int(seconds), run, trigger)


def _source(found: Any) -> StreamSource:
    if found is None:
        found = {}  # then a folder's, whose dir is missing
    if not isinstance(found, dict):
        raise TransformerConfigError(
            "DecodingFailure at .input: expecting an object such as { type = file, dir = ... }"
        )
    kind = str(found.get("type", _untyped(found))).lower()
    if kind not in INPUTS:
        raise TransformerConfigError(
            f"Input type {found.get('type')} is not supported yet. "
            "Supported types: 'file', 'kafka', 'kinesis', 'pubsub'"
        )
    if kind == "pubsub":
        return StreamSource("pubsub", pubsub=_pubsub(found))
    if kind == "kinesis":
        return StreamSource("kinesis", kinesis=_kinesis(found))
    if kind == "file":
        path = found.get("dir")
        if not isinstance(path, str) or not path:
            raise TransformerConfigError("DecodingFailure at .input.dir: Missing required field")
        return StreamSource("file", path=path)
    topic, servers = found.get("topicName"), found.get("bootstrapServers")
    if not isinstance(topic, str) or not topic:
        raise TransformerConfigError("DecodingFailure at .input.topicName: Missing required field")
    if not isinstance(servers, str) or not servers:
        raise TransformerConfigError("DecodingFailure at .input.bootstrapServers: Missing required field")
    conf = found.get("consumerConf") or {}
    if not isinstance(conf, dict):
        raise TransformerConfigError("DecodingFailure at .input.consumerConf: expecting an object")
    return StreamSource("kafka", topic=topic, bootstrap_servers=servers, options=tuple(sorted(_flat(conf))))


def _untyped(found: dict[str, Any]) -> str:
    """An input section without a `type`: the reference's GCP input (a `subscription`, its
    transformer's only input, has none), else a folder (this transformer's default)."""
    return "pubsub" if "subscription" in found and "dir" not in found else "file"


def _kinesis(found: dict[str, Any]) -> KinesisInput:
    """The reference's Kinesis input section (its defaults: `LATEST`, polling of 10000 records)."""

    def text(key: str, default: str | None = None) -> str | None:
        value = found.get(key, default)
        if value is not None and (not isinstance(value, str) or not value):
            raise TransformerConfigError(f"DecodingFailure at .input.{key}: expecting a string")
        return value

    stream = text("streamName")
    if stream is None:
        raise TransformerConfigError("DecodingFailure at .input.streamName: Missing required field")
    region = text("region") or default_region()
    if not region:
        raise TransformerConfigError("Region cannot be resolved, needs to be passed explicitly (input.region)")
    position, timestamp = found.get("position", "LATEST"), None
    if isinstance(position, dict):  # { type = AT_TIMESTAMP, timestamp = "2026-11-27T10:00:00Z" }
        moment = position.get("timestamp")
        instant = parse_instant(moment) if isinstance(moment, str) else None
        if str(position.get("type", "")).upper() != "AT_TIMESTAMP" or instant is None:
            raise TransformerConfigError(
                "DecodingFailure at .input.position: expecting LATEST, TRIM_HORIZON or "
                '{ type = AT_TIMESTAMP, timestamp = "2026-11-27T10:00:00Z" }'
            )
        position, timestamp = "AT_TIMESTAMP", instant // 1_000_000
    elif str(position).upper() in ("LATEST", "TRIM_HORIZON"):
        position = str(position).upper()
    else:
        raise TransformerConfigError(
            f"DecodingFailure at .input.position: {position} is not LATEST, TRIM_HORIZON or an AT_TIMESTAMP object"
        )
    retrieval = found.get("retrievalMode") or {"type": "Polling"}
    kind = str(retrieval.get("type", "")).lower() if isinstance(retrieval, dict) else ""
    if kind not in ("polling", "fanout"):
        raise TransformerConfigError(
            "DecodingFailure at .input.retrievalMode: expecting { type = Polling, maxRecords = 10000 } or "
            "{ type = FanOut }"
        )
    records = retrieval.get("maxRecords", 10000)
    if isinstance(records, bool) or not isinstance(records, int) or not 1 <= records <= 10000:
        raise TransformerConfigError(
            f"DecodingFailure at .input.retrievalMode.maxRecords: {records!r} is out of range, "
            "it must be from 1 to 10000"
        )
    buffer = found.get("bufferSize", 3)
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
        raise TransformerConfigError(f"DecodingFailure at .input.bufferSize: {buffer!r} is not a positive integer")
    return KinesisInput(
        stream=stream,
        region=check_known_region(region, "input.region"),
        endpoint=text("customEndpoint"),
        position=position,
        timestamp_ms=timestamp,
        max_records=records,
        app_name=text("appName", "snowplow-transformer-kinesis") or "",
        buffer_size=buffer,
        fan_out=kind == "fanout",
        dynamodb_endpoint=text("dynamodbCustomEndpoint"),
        cloudwatch_endpoint=text("cloudwatchCustomEndpoint"),
    )


def _pubsub(found: dict[str, Any]) -> PubsubInput:
    """The reference's Pub/Sub input section (its defaults: one pull, 500 messages held)."""
    subscription = found.get("subscription")
    if not isinstance(subscription, str) or not subscription:
        raise TransformerConfigError("DecodingFailure at .input.subscription: Missing required field")
    if (wrong := pubsub_misnamed(subscription, "input.subscription", "subscriptions")) is not None:
        raise TransformerConfigError(wrong)

    def count(key: str, default: int) -> int:
        value = found.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TransformerConfigError(f"DecodingFailure at .input.{key}: {value!r} is not a positive integer")
        return value

    def seconds(key: str, default: str) -> float:
        return duration(found.get(key, default), f"input.{key}").total_seconds()

    return PubsubInput(
        subscription,
        parallel_pull_count=count("parallelPullCount", 1),
        buffer_size=count("bufferSize", 500),
        max_ack_extension_seconds=seconds("maxAckExtensionPeriod", "1 hour"),
        min_ack_extension_seconds=seconds("minDurationPerAckExtension", "60 seconds"),
        await_terminate_seconds=seconds("awaitTerminatePeriod", "60 seconds"),
    )


def _flat(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Kafka's dotted settings, which HOCON reads unquoted as nested objects, as `key.name` pairs."""
    pairs = []
    for quoted, value in tree.items():
        key = quoted.strip('"')  # pyhocon keeps the quotes of a quoted dotted key
        if isinstance(value, dict):
            pairs.extend(_flat(value, f"{prefix}{key}."))
        else:
            pairs.append((f"{prefix}{key}", str(value)))
    return pairs
