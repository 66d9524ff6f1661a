"""The stream transformer's config: the reference stream transformer's HOCON (`input`, `output`,
`windowing`, `queue`, `formats`, `validations`, `featureFlags`, `monitoring`, `telemetry`) with
the batch job's `deduplication` section (docs/stream-transformer.md). Everything a window's run
needs is the batch job's `TransformerConfig`, checked by the batch job's rules."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from events_manifest._transformer.config import (
    DEFAULTS,
    TransformerConfig,
    TransformerConfigError,
    duration,
    merged,
)

STREAM_DEFAULTS = (
    DEFAULTS
    + """
windowing = 10 minutes
trigger = 10 seconds
formats { transformationType = widerow }
input { type = file }
"""
)
"""The batch job's defaults, and the stream transformer's own: ten-minute windows of wide rows."""

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

    def describe(self) -> str:
        return f"folder {self.path}" if self.type == "file" else f"Kafka topic {self.topic} at {self.bootstrap_servers}"


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
    if not isinstance(found, dict):
        raise TransformerConfigError(
            "DecodingFailure at .input: expecting an object such as { type = file, dir = ... }"
        )
    kind = str(found.get("type", "")).lower()
    if kind not in INPUTS:
        raise TransformerConfigError(
            f"Input type {found.get('type')} is not supported yet. Supported types: 'file', 'kafka'"
        )
    if kind in ("kinesis", "pubsub"):
        raise TransformerConfigError(
            f"input.type {kind}: this transformer reads a folder of enriched files or a Kafka topic through Spark's "
            "own sources; put the stream into Kafka, or its files into a folder (input.type = file)"
        )
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
