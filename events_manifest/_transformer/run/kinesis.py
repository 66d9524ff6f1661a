"""Bad rows to a Kinesis stream (`output.bad.type = kinesis`), as the reference's sink writes them:
one record per bad row (its UTF-8 JSON, a random integer as partition key), sent by `PutRecords`
in calls of at most `recordLimit` records and `byteLimit` bytes.

Nothing is lost when the stream throttles: throttled records are sent again after Fibonacci steps
from `throttledBackoffPolicy.minBackoff` to its `maxBackoff`, for as long as it takes. Any other
failure is retried after full-jitter pauses of `backoffPolicy` up to its `maxRetries`, then stops
the run (not committed: its rerun sends its bad rows again). A bad row over Kinesis's record limit
is sent as a `size_violation` bad row holding its beginning, as Snowplow's stream apps do.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import botocore.exceptions
from botocore.config import Config

from events_manifest import _redact as redact
from events_manifest._aws import boto3_session, default_region
from events_manifest._transformer.config import Backoff, BadSink, TransformerConfigError, check_known_region
from events_manifest._transformer.output import bad_rows
from events_manifest.errors import DeliveryError

RECORD_LIMIT = 1024 * 1024
"""Kinesis's limit of one record: its data and partition key together."""
THROTTLED = {"ProvisionedThroughputExceededException", "ThrottlingException", "LimitExceededException"}


class KinesisSinkError(DeliveryError):
    """The stream kept refusing records for reasons other than throttling, after every retry."""


@attrs.frozen
class Stream:
    """Where bad rows go, resolved where the job starts (the driver), since the processes that
    send (Spark's workers, on other hosts) may not share its environment: the sink's settings, its
    region and its endpoint (`output.bad.customEndpoint`, else the one the environment names:
    `AWS_ENDPOINT_URL_KINESIS`, `AWS_ENDPOINT_URL`)."""

    sink: BadSink
    region: str
    endpoint: str | None = None

    @classmethod
    def of(cls, sink: BadSink) -> Stream:
        region = sink.region or default_region()
        if not region:
            raise TransformerConfigError("Region cannot be resolved, needs to be passed explicitly")
        endpoint = sink.endpoint or os.environ.get("AWS_ENDPOINT_URL_KINESIS") or os.environ.get("AWS_ENDPOINT_URL")
        return cls(sink, check_known_region(region), endpoint)

    def client(self) -> Any:
        config = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "total_max_attempts": 1})
        return boto3_session().client("kinesis", region_name=self.region, endpoint_url=self.endpoint, config=config)

    def writer(self) -> KinesisSink:
        """The sink that sends bad rows there, made where they are sent (a Spark worker)."""
        return KinesisSink(self.sink, self.client())


class KinesisSink:
    """Sends bad rows to the sink's stream (see the module's docstring); `sleep` and `draw` are the
    pauses and the random numbers, for tests to watch."""

    def __init__(
        self,
        sink: BadSink,
        kinesis: Any,
        *,
        now: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], None] = time.sleep,
        draw: random.Random | None = None,
    ) -> None:
        self.sink = sink
        self.kinesis = kinesis
        self.now = now
        self.sleep = sleep
        self.random = draw or random.Random()
        self.sent = 0

    def write(self, rows: Iterable[str]) -> int:
        """Send every row; returns how many records were sent."""
        batch: list[dict[str, Any]] = []
        size = 0
        for row in rows:
            record = self._record(row)
            length = len(record["Data"]) + len(record["PartitionKey"])
            if batch and (len(batch) >= self.sink.record_limit or size + length > self.sink.byte_limit):
                self._put(batch)
                batch, size = [], 0
            batch.append(record)
            size += length
        if batch:
            self._put(batch)
        return self.sent

    def _record(self, row: str) -> dict[str, Any]:
        key = str(self.random.randint(0, 2**31 - 1))
        data = row.encode("utf-8", "replace")
        limit = min(RECORD_LIMIT, self.sink.byte_limit) - len(key)
        if len(data) > limit:
            data = bad_rows.size_violation(row, len(data), limit, self.now()).encode()
        return {"Data": data, "PartitionKey": key}

    def _put(self, records: list[dict[str, Any]]) -> None:
        throttled, failed = 0, 0
        while records:
            try:
                answer = self.kinesis.put_records(StreamName=self.sink.stream, Records=records)
                results = answer["Records"]
            except botocore.exceptions.ClientError as e:
                code = e.response.get("Error", {}).get("Code", "")
                results = [{"ErrorCode": code, "ErrorMessage": str(e)}] * len(records)
            except botocore.exceptions.BotoCoreError as e:
                results = [{"ErrorCode": type(e).__name__, "ErrorMessage": str(e)}] * len(records)
            retry = [(record, result) for record, result in zip(records, results, strict=True) if "ErrorCode" in result]
            self.sent += len(records) - len(retry)
            if not retry:
                return
            records = [record for record, _ in retry]
            if all(result["ErrorCode"] in THROTTLED for _, result in retry):
                throttled += 1
                self.sleep(_fibonacci(self.sink.throttled, throttled))
                continue
            failed += 1
            if self.sink.backoff.retries is not None and failed > self.sink.backoff.retries:
                reason = next(result for _, result in retry if result["ErrorCode"] not in THROTTLED)
                raise KinesisSinkError(
                    f"Kinesis stream {self.sink.stream} refused {len(records)} bad rows after "
                    f"{self.sink.backoff.retries} retries ({reason['ErrorCode']}: "
                    f"{redact.text(reason.get('ErrorMessage', ''))}): "
                    "the run is not committed; run the transformer again once the stream takes them"
                )
            self.sleep(_jitter(self.sink.backoff, failed, self.random))


def _fibonacci(policy: Backoff, step: int) -> float:
    """The `step`th pause of a throttled write: `min` times the `step`th Fibonacci number, at most `max`."""
    a, b = 1, 1
    for _ in range(step - 1):
        a, b = b, a + b
    return min(policy.max, policy.min * a)


def _jitter(policy: Backoff, attempt: int, draw: random.Random) -> float:
    """The pause before the `attempt`th retry of a failed write: full jitter, from `min` up to the
    exponential step, at most `max`."""
    return draw.uniform(policy.min, min(policy.max, policy.min * 2**attempt))
