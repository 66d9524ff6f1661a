"""The stream transformer's Kinesis input (`input.type = kinesis`): the enriched stream read shard
by shard with boto3, from offsets Spark keeps in its checkpoint (docs/stream-transformer.md).

An offset is, for each shard, the sequence number of the last record read (`after`), or where a
shard not read yet starts (`at`: a time, for `LATEST` pinned to the first start and for
`AT_TIMESTAMP`; none: its first record), and whether the shard is read to its end (`done`: closed
by a split or a merge). A micro-batch is what lies between two offsets, so a batch replayed after a
crash reads the same records again (`between`). A child shard is read only once its parents are
done, so the order of a partition key's records holds across resharding. Records the Kinesis
Producer Library aggregated are split into their user records, as KCL does (`aws-kinesis-agg`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import botocore.exceptions
from botocore.config import Config

from events_manifest._aws import boto3_session
from events_manifest.errors import ManifestError

CALLS_PER_TRIGGER = 5
"""GetRecords calls a shard gets at most a micro-batch (Kinesis serves 5 a second a shard)."""
THROTTLED = {"ProvisionedThroughputExceededException", "ThrottlingException", "LimitExceededException"}
PASSING = THROTTLED | {"InternalFailure", "ServiceUnavailable", "InternalServerError", "KMSThrottlingException"}
"""Refusals that pass: a live read keeps what it read and the next trigger goes on; a replay waits and
tries again. Anything else stops the job in one line. The SDK tries a call twice before that."""
EXPIRED = "ExpiredIteratorException"
BACKOFF = (0.2, 5.0)
"""The pauses between reads of a throttled shard, doubling from the first to the last."""

Offsets = dict[str, Any]
"""`{"shards": {shard id: {"after": sequence number | None, "at": milliseconds | None, "done": bool}}}`."""


class KinesisInputError(ManifestError):
    """The stream cannot be read: it does not exist (deleted, or never created), or refuses us."""


class _Passing(KinesisInputError):
    """A refusal that passes (`PASSING`), or no answer: a live read waits for the next trigger."""


@attrs.frozen
class KinesisInput:
    """The reference's `input` section for Kinesis. `app_name`, `buffer_size`, `fan_out` and the
    DynamoDB and CloudWatch endpoints are KCL's (its lease table, its record buffer, enhanced fan-out,
    its metrics): read, and not needed here, where Spark's checkpoint holds the offsets."""

    stream: str
    region: str
    endpoint: str | None = None
    position: str = "LATEST"
    timestamp_ms: int | None = None
    """For `AT_TIMESTAMP`."""
    max_records: int = 10000
    app_name: str = "snowplow-transformer-kinesis"
    buffer_size: int = 3
    fan_out: bool = False
    dynamodb_endpoint: str | None = None
    cloudwatch_endpoint: str | None = None

    def describe(self) -> str:
        return f"Kinesis stream {self.stream} in {self.region}"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> KinesisInput:
        return cls(**found)


@attrs.define
class ShardReader:
    """Reads a stream's shards between offsets (see the module)."""

    source: KinesisInput
    clock: Callable[[], float] = time.time
    _client: Any = attrs.field(default=None, init=False)
    _listed: list[dict[str, Any]] = attrs.field(factory=list, init=False)
    """The last listing of the shards: a trigger whose listing did not pass reads the shards it knew."""

    @property
    def client(self) -> Any:
        if self._client is None:
            config = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "total_max_attempts": 2})
            # two attempts: a refusal that passes is waited out a trigger at a time (`PASSING`)
            self._client = boto3_session().client(
                "kinesis", region_name=self.source.region, endpoint_url=self.source.endpoint, config=config
            )
        return self._client

    def shards(self) -> list[dict[str, Any]]:
        """The stream's shards, open and closed (`ListShards`), or the stream's absence in one line."""
        found: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {"StreamName": self.source.stream}
        try:
            while True:
                answer = self.client.list_shards(**arguments)
                found += answer["Shards"]
                if not answer.get("NextToken"):
                    return found
                arguments = {"NextToken": answer["NextToken"]}
        except botocore.exceptions.ClientError as e:
            if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                raise KinesisInputError(
                    f"{self.source.describe()} does not exist (deleted, or never created): create it, or correct "
                    "input.streamName and input.region"
                ) from None
            kind = _Passing if _code(e) in PASSING else KinesisInputError
            raise kind(f"{self.source.describe()} cannot be listed: {_said(e)}") from None
        except botocore.exceptions.BotoCoreError as e:
            raise _Passing(f"{self.source.describe()} cannot be reached: {_said(e)}") from None

    def initial(self) -> Offsets:
        """Where a first start reads each shard: `LATEST` pinned to now (a batch replayed reads the same)."""
        at = {"LATEST": int(self.clock() * 1000), "AT_TIMESTAMP": self.source.timestamp_ms}.get(self.source.position)
        return {"shards": {shard["ShardId"]: _start(at) for shard in self.shards()}}

    def read(self, start: Offsets) -> tuple[list[bytes], Offsets]:
        """The records after `start`, every readable shard at once (a thread a shard), at most
        `CALLS_PER_TRIGGER` reads of `max_records` a shard; and the offsets after them."""
        known: dict[str, dict[str, Any]] = {key: dict(value) for key, value in start["shards"].items()}
        try:
            self._listed = listed = self.shards()
        except _Passing:
            listed = self._listed
        for shard in listed:
            known.setdefault(shard["ShardId"], _start(None))  # a child of a split or a merge: from its start
        parents = {shard["ShardId"]: _parents(shard) for shard in listed}
        closed = {shard["ShardId"] for shard in listed if "EndingSequenceNumber" in shard["SequenceNumberRange"]}
        readable = [
            shard
            for shard, state in sorted(known.items())
            if not state["done"] and all(known.get(parent, {"done": True})["done"] for parent in parents.get(shard, ()))
        ]
        with ThreadPoolExecutor(max(1, min(len(readable), 32))) as pool:
            fetched = list(pool.map(lambda shard: self._fetch(shard, known[shard], shard in closed), readable))
        records: list[bytes] = []
        for name, (taken, reached) in zip(readable, fetched, strict=True):
            records += taken
            known[name] = reached
        return records, {"shards": known}

    def between(self, start: Offsets, end: Offsets) -> list[bytes]:
        """The records of a micro-batch again (a replay): each shard from `start` to `end`."""
        records: list[bytes] = []
        for shard, state in sorted(end["shards"].items()):
            before = start["shards"].get(shard, _start(None))
            if state["after"] is not None and state["after"] != before["after"]:
                records += self._until(shard, before, int(state["after"]))
        return records

    def _fetch(self, shard: str, state: dict[str, Any], closed: bool) -> tuple[list[bytes], dict[str, Any]]:
        """Read on from `state`; a closed shard read to its end (no next iterator, or nothing left
        to read) is `done`. A refusal that passes keeps what was read: the next trigger goes on."""
        records: list[bytes] = []
        try:
            iterator = self._iterator(shard, state)
            for _ in range(CALLS_PER_TRIGGER):
                try:
                    answer = self.client.get_records(ShardIterator=iterator, Limit=self.source.max_records)
                except botocore.exceptions.ClientError as e:
                    if _code(e) != EXPIRED:
                        raise
                    iterator = self._iterator(shard, state)
                    continue
                for record in answer["Records"]:
                    if _arrived(record, state):
                        records += user_records(record)
                    state = {"after": record["SequenceNumber"], "at": None, "done": False}
                iterator = answer.get("NextShardIterator")
                caught_up = not answer["Records"] and answer.get("MillisBehindLatest", 0) == 0
                if iterator is None or (closed and caught_up):
                    return records, {**state, "done": True}
                if caught_up:
                    break
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            if _code(e) not in (*PASSING, None):
                raise KinesisInputError(f"{self.source.describe()}: shard {shard} cannot be read: {_said(e)}") from None
        return records, state

    def _until(self, shard: str, state: dict[str, Any], last: int) -> list[bytes]:
        """A shard's records from `state` to the sequence number `last`, however long it takes (a
        refusal that passes is waited out)."""
        records: list[bytes] = []
        iterator: Any = None
        pause = BACKOFF[0]
        while True:
            try:
                if iterator is None:
                    iterator = self._iterator(shard, state)
                answer = self.client.get_records(ShardIterator=iterator, Limit=self.source.max_records)
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
                if _code(e) not in (*PASSING, EXPIRED, None):
                    raise KinesisInputError(
                        f"{self.source.describe()}: shard {shard} cannot be read again: {_said(e)}"
                    ) from None
                time.sleep(pause)
                pause, iterator = min(pause * 2, BACKOFF[1]), None
                continue
            for record in answer["Records"]:
                if int(record["SequenceNumber"]) > last:
                    return records
                if _arrived(record, state):
                    records += user_records(record)
                state = {"after": record["SequenceNumber"], "at": None, "done": False}
                if int(record["SequenceNumber"]) == last:
                    return records
            iterator = answer.get("NextShardIterator")
            if iterator is None:
                return records

    def _iterator(self, shard: str, state: Mapping[str, Any]) -> Any:
        arguments: dict[str, Any] = {"StreamName": self.source.stream, "ShardId": shard}
        if state["after"] is not None:
            arguments.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=state["after"])
        elif state["at"] is not None:
            arguments.update(ShardIteratorType="AT_TIMESTAMP", Timestamp=state["at"] / 1000)
        else:
            arguments.update(ShardIteratorType="TRIM_HORIZON")
        return self.client.get_shard_iterator(**arguments)["ShardIterator"]


def user_records(record: Mapping[str, Any]) -> Iterator[bytes]:
    """A Kinesis record's data, or the user records the Kinesis Producer Library aggregated in it."""
    from aws_kinesis_agg import MAGIC
    from aws_kinesis_agg.deaggregator import iter_deaggregate_records

    data: bytes = record["Data"]
    if not data.startswith(MAGIC):
        yield data
        return
    import base64

    for user in iter_deaggregate_records([dict(record)], data_format="Boto3"):
        found = user["kinesis"]
        yield base64.b64decode(found["data"]) if found.get("aggregated") else found["data"]


def _arrived(record: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    """Whether a record read from a shard's start time (`at`) arrived at or after it: Kinesis takes
    that time to the second, the offset holds it to the millisecond."""
    at = state["at"] if state["after"] is None else None
    return at is None or record["ApproximateArrivalTimestamp"].timestamp() * 1000 >= at


def _start(at: int | None) -> dict[str, Any]:
    return {"after": None, "at": at, "done": False}


def _parents(shard: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(shard[key] for key in ("ParentShardId", "AdjacentParentShardId") if shard.get(key))


def _code(error: Exception) -> str | None:
    """A refusal's code; None for a call that got no answer (a connection that failed), which passes."""
    if isinstance(error, botocore.exceptions.ClientError):
        return str(error.response.get("Error", {}).get("Code"))
    return None


def _said(error: Exception) -> str:
    return str(error).replace("\n", " ")
