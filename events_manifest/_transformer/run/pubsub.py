"""Bad rows and the run's message on Pub/Sub topics (`output.bad.type = pubsub`, `queue.topic`), as
the reference's GCP transformer sends them: one message a bad row (its UTF-8 JSON), published by
the maintained client in batches of at most `batchSize` messages and `requestByteThreshold`
bytes, or after `delayThreshold`; the run's message, its text as the message's data.

Every message is waited for: a topic that does not exist or refuses (after the client's own
retries) stops the run before its commit, in one line, and its rerun sends them again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from events_manifest import _redact as redact
from events_manifest._transformer.config import BadSink
from events_manifest._transformer.output import bad_rows
from events_manifest._transformer.stream.pubsub_input import no_credentials
from events_manifest.errors import DeliveryError

MESSAGE_LIMIT = 10_000_000
"""Pub/Sub's limit of one message's data, in bytes."""
EMULATOR = "PUBSUB_EMULATOR_HOST"
"""Where the Google clients find a Pub/Sub emulator, instead of Google's service."""
TIMEOUT_SECONDS = 60.0
"""How long a message is waited for at most (the client retries within it)."""


class PubsubSinkError(DeliveryError):
    """A topic refused messages: the run is not committed (bad rows) or stays sealed (its message)."""


def _publisher(batch: tuple[int, int, float] | None = None) -> Any:
    from google.auth.exceptions import GoogleAuthError
    from google.cloud import pubsub_v1  # the `pubsub` extra: imported only for a Pub/Sub topic

    settings: Any = ()
    if batch is not None:
        messages, size, delay = batch
        settings = pubsub_v1.types.BatchSettings(max_messages=messages, max_bytes=size, max_latency=delay)
    try:
        return pubsub_v1.PublisherClient(batch_settings=settings)
    except GoogleAuthError as e:
        raise PubsubSinkError(f"Pub/Sub: {no_credentials(e)}") from None


def _reason(error: BaseException) -> str:
    return redact.text(" ".join(str(error).split()) or type(error).__name__)


@attrs.frozen
class Topic:
    """Where bad rows go: the sink's topic and batching, and the emulator the driver was pointed at
    (`PUBSUB_EMULATOR_HOST`), resolved where the job starts: Spark's workers, which publish, may
    not share its environment."""

    sink: BadSink
    emulator: str | None = None

    @classmethod
    def of(cls, sink: BadSink) -> Topic:
        return cls(sink, os.environ.get(EMULATOR) or None)

    def writer(self) -> PubsubSink:
        if self.emulator is not None:
            os.environ[EMULATOR] = self.emulator  # the client reads it alone: in a worker, the driver's
        return PubsubSink(self.sink, _publisher((self.sink.batch_size, self.sink.request_bytes, self.sink.delay)))


class PubsubSink:
    """Publishes bad rows to the sink's topic and waits for each (see the module's docstring)."""

    def __init__(self, sink: BadSink, publisher: Any, *, now: Callable[[], int] = time.time_ns) -> None:
        self.sink, self.publisher, self.now = sink, publisher, now
        self.sent = 0

    def write(self, rows: Iterable[str]) -> int:
        """Publish every row, then wait for all of them; how many were published in all."""
        futures = [self.publisher.publish(self.sink.topic, self._data(row)) for row in rows]
        failed: list[BaseException] = []
        for future in futures:
            try:
                future.result(timeout=TIMEOUT_SECONDS)
                self.sent += 1
            except Exception as e:
                failed.append(e)
        if failed:
            raise PubsubSinkError(
                f"Pub/Sub topic {self.sink.topic} refused {len(failed)} bad rows ({_reason(failed[0])}): the run is "
                "not committed; run the transformer again once the topic takes them"
            )
        return self.sent

    def _data(self, row: str) -> bytes:
        data = row.encode("utf-8", "replace")
        if len(data) > MESSAGE_LIMIT:
            data = bad_rows.size_violation(row, len(data), MESSAGE_LIMIT, self.now()).encode()
        return data


def queue_publisher() -> Any:
    """The client the run's message goes out on, made before any run."""
    return _publisher()


def send(topic: str, publisher: Any, body: str, base: str) -> None:
    """Publish the run's message and wait for it; a failure names the message and the folder."""
    try:
        publisher.publish(topic, body.encode("utf-8")).result(timeout=TIMEOUT_SECONDS)
    except Exception as e:
        raise PubsubSinkError(
            f"Could not send shredded types {body} to Pub/Sub topic {topic} for {base} ({_reason(e)}). The run's "
            "rows are written and sealed: once the topic takes it, run the transformer again; it sends this message "
            "and commits the run"
        ) from None
