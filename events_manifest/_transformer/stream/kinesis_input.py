"""The stream transformer's Kinesis input (`input.type = kinesis`): the enriched stream read shard
by shard with boto3, between offsets Spark keeps in its checkpoint (docs/stream-transformer.md).

An offset holds, for each shard, where the next micro-batch starts (`State`): after the last record
read (`after`), at a record not read yet (`from`), at a time (`at`: `LATEST` pinned to the first
start, `AT_TIMESTAMP`), or at the shard's first record (none of them); and whether the shard is read
to its end (`done`: closed by a split or a merge). Where a micro-batch ends is decided on the driver
without reading the batch (`ShardReader.latest`): a shard is cut at its first record that arrived
after a recent time (one `AT_TIMESTAMP` read of one record), or, if it received nothing since, at
the middle time of its unread records; only when these span two seconds or less does the driver read
them, to the last (at most `CALLS_PER_TRIGGER` reads). A micro-batch is then read by one task a
shard (`ShardReader.records`), and read again the same after a crash. A child shard is read only
once its parents are done, so the order of a partition key's records holds across resharding.
Records the Kinesis Producer Library aggregated are split into their user records, as KCL does
(`aws-kinesis-agg`).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import botocore.exceptions
from botocore.config import Config

from events_manifest._aws import boto3_session
from events_manifest._jobs.storage import Storage, join
from events_manifest.errors import ManifestError

MARGIN_MS = 1000
"""A shard is cut at its first record that arrived after this long before the trigger (to the second,
as Kinesis takes a time): the driver reads one record, and the records after it wait for the next
trigger."""
SPAN_MS = 60_000
"""A micro-batch takes at most this much of a shard's arrival time (at most 60 MB, 60,000 records at
Kinesis's write limit of a shard): a backlog is read a minute of it at a time."""
HALVING_MS = 2000
"""A shard that received nothing since the cut (a producer stopped over a backlog) is cut at the
middle time of its unread records while they span more than this: the driver reads at most these
two seconds of a shard's records, and a backlog ends in halves."""
SECOND_OF_RECORDS = 1000
"""How many records a read from a time takes at least, whatever `maxRecords`: an `AT_TIMESTAMP`
iterator starts at the second, and those before the time within it (at most a second of a shard's
writes, 1,000 records or 1 MB) are skipped in one call, where `maxRecords = 1` would take one a call
and never get past a busy second."""
PACE_MS = 1500
"""A shard is cut at most once this long, by the reader's clock, whatever the trigger: a cut and the
task's read of its micro-batch make at most four GetShardIterator and five GetRecords calls on a
shard (a page more for each 10,000 records it reads), and Kinesis serves five of each a second a
shard. A trigger sooner leaves the shard where it was (nothing new from it); the stream's shards are
listed at most as often."""
LISTING = ""
"""The key of the stream's listing among the shards' last reads (no shard id is empty)."""
CALLS_PER_TRIGGER = 5
"""GetRecords calls the driver makes at most to find a shard's last record when nothing is left to
cut (Kinesis serves 5 a second a shard)."""
THROTTLED = {"ProvisionedThroughputExceededException", "ThrottlingException", "LimitExceededException"}
PASSING = THROTTLED | {"InternalFailure", "ServiceUnavailable", "InternalServerError", "KMSThrottlingException"}
"""Refusals that pass: the driver leaves the shard where it was until the next trigger; a task waits
and tries again. Anything else stops the job in one line. The SDK tries a call twice before that."""
EXPIRED = "ExpiredIteratorException"
MISSING = "ResourceNotFoundException"
"""The stream, or a shard of it, does not exist: deleted while read, or never created."""
CAUGHT_UP = 2
"""Answers in a row a task takes for the shard's latest record (no record, `MillisBehindLatest` 0)
before it says its range's end is not there (`ShardReader._gone`)."""
BACKOFF = (0.2, 5.0)
"""The pauses between reads of a throttled shard, doubling from the first to the last over refusals
in a row; once the shard answers, the next refusal waits the first again."""
DRIVER_PATIENCE = 2
"""Refusals that pass the driver waits out in a shard's cut (0.2 then 0.4 s) before it leaves the
shard where it was until the next trigger: under throttling, most triggers still move."""

State = dict[str, Any]
"""`{"after": sequence number | None, "from": sequence number | None, "at": milliseconds | None,
"ts": milliseconds | None, "done": bool}`: one position of the three, or none (the shard's first
record); `ts` the arrival time of the first record not read, where known."""
Offsets = dict[str, Any]
"""`{"shards": {shard id: State}}`."""


class KinesisInputError(ManifestError):
    """The stream cannot be read: it does not exist (deleted, or never created), or refuses us."""


class KinesisStreamMissing(KinesisInputError):
    """The stream does not exist (deleted, or never created)."""


class _Passing(KinesisInputError):
    """A refusal that passes (`PASSING`), or no answer: the driver waits for the next trigger."""


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
    """For `AT_TIMESTAMP`; for `LATEST`, the time of the checkpoint's first start (`pinned`)."""
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


@attrs.frozen
class ShardRange:
    """One shard's part of a micro-batch: from `start` up to `end` (`ShardReader.records`), a task."""

    shard: str
    start: State
    end: State


@attrs.frozen
class _Record:
    sequence: str
    ts: int
    """Its arrival time, in milliseconds."""


@attrs.define
class ShardReader:
    """Cuts a stream's micro-batches on the driver and reads them in tasks (see the module)."""

    source: KinesisInput
    clock: Callable[[], float] = time.time
    margin_ms: int = MARGIN_MS
    span_ms: int = SPAN_MS
    pace_ms: int = PACE_MS
    sleep: Callable[[float], None] = time.sleep
    """How a refusal that passes is waited out (`BACKOFF`): a test's own, to wait for nothing."""
    _client: Any = attrs.field(default=None, init=False)
    _listed: list[dict[str, Any]] = attrs.field(factory=list, init=False)
    """The last listing of the shards: a trigger whose listing did not pass cuts the shards it knew."""
    _read_ms: dict[str, int] = attrs.field(factory=dict, init=False)
    """When each shard was last cut, and the shards listed (`LISTING`), by `clock`: the pace (`PACE_MS`)."""

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
            if _code(e) == MISSING:
                raise self._missing() from None
            kind = _Passing if _code(e) in PASSING else KinesisInputError
            raise kind(f"{self.source.describe()} cannot be listed: {_said(e)}") from None
        except botocore.exceptions.BotoCoreError as e:
            raise _Passing(f"{self.source.describe()} cannot be reached: {_said(e)}") from None

    def _missing(self) -> KinesisStreamMissing:
        return KinesisStreamMissing(
            f"{self.source.describe()} does not exist (deleted, or never created): create it, or correct "
            "input.streamName and input.region"
        )

    def _unreadable(self, shard: str, error: Exception) -> KinesisInputError:
        """A shard that cannot be read: the stream's absence, if it is gone (`shards` says so)."""
        if _code(error) == MISSING:
            with contextlib.suppress(_Passing):
                self.shards()
        return KinesisInputError(f"{self.source.describe()}: shard {shard} cannot be read: {_said(error)}")

    def initial(self) -> Offsets:
        """Where the first micro-batch reads each shard: `LATEST` at its pin (`pinned`), else now."""
        latest = self.source.timestamp_ms if self.source.timestamp_ms is not None else int(self.clock() * 1000)
        at = {"LATEST": latest, "AT_TIMESTAMP": self.source.timestamp_ms}.get(self.source.position)
        return {"shards": {shard["ShardId"]: _start(at) for shard in self.shards_waited()}}

    def latest(self, start: Offsets) -> Offsets:
        """Where the micro-batch after `start` ends: each readable shard cut at once (a thread a
        shard), children of a split or a merge found and started at their first record."""
        known = {shard: _state(found) for shard, found in start["shards"].items()}
        now = int(self.clock() * 1000)
        if not self._paced(LISTING, now):
            self._read_ms[LISTING] = now
            with contextlib.suppress(_Passing):
                self._listed = self.shards()
        listed = self._listed
        for shard in listed:
            known.setdefault(shard["ShardId"], _start(None))
        parents = {shard["ShardId"]: _parents(shard) for shard in listed}
        closed = {shard["ShardId"] for shard in listed if "EndingSequenceNumber" in shard["SequenceNumberRange"]}
        readable = [
            shard
            for shard, state in sorted(known.items())
            if not state["done"]
            and all(known.get(parent, {"done": True})["done"] for parent in parents.get(shard, ()))
            and not self._paced(shard, now)
        ]
        self._read_ms.update(dict.fromkeys(readable, now))
        with ThreadPoolExecutor(max(1, min(len(readable), 32))) as pool:
            cut = list(pool.map(lambda shard: self._cut(shard, known[shard], shard in closed, now), readable))
        known.update(zip(readable, cut, strict=True))
        return {"shards": known}

    def _paced(self, read: str, now: int) -> bool:
        """Whether a shard (or `LISTING`) was read less than `pace_ms` before `now` (`PACE_MS`); a
        clock stepped back is not waited for."""
        last = self._read_ms.get(read)
        return last is not None and 0 <= now - last < self.pace_ms

    def behind(self, start: Offsets, before_ms: int) -> bool:
        """Whether a shard holds a record after `start` that arrived before `before_ms`: what an
        available-now run has left of the stream it started on. Refusals that pass are waited out
        (`BACKOFF`): a run that could not read must not end as if it had read everything."""
        known = {shard: _state(found) for shard, found in start["shards"].items()}
        for shard in self.shards_waited():
            known.setdefault(shard["ShardId"], _start(None))
        for shard, state in sorted(known.items()):
            first = None if state["done"] else self._first(shard, state, patient=True)[0]
            if first is not None and first.ts < before_ms:
                return True
        return False

    def ranges(self, start: Offsets, end: Offsets) -> list[ShardRange]:
        """The micro-batch from `start` to `end`: one range a shard that moved."""
        found = []
        for shard, reached in sorted(end["shards"].items()):
            before, state = _state(start["shards"].get(shard, _start(None))), _state(reached)
            if _position(state) != _position(before):
                found.append(ShardRange(shard, before, state))
        return found

    def records(self, part: ShardRange) -> Iterator[bytes]:
        """A range's user records, however long it takes (a refusal that passes is waited out): what
        a task reads, and reads the same again after a crash. A range whose end the shard no longer
        leads to (`_gone`) stops the read in one line, where it would read an open shard for ever."""
        state, caught_up = part.start, 0
        last, before = (None if part.end[key] is None else int(part.end[key]) for key in ("after", "from"))
        bounded = last is not None or before is not None
        try:
            for answer in self._pages(part.shard, part.start, self.source.max_records, patient=True):
                for record in answer["Records"]:
                    sequence = int(record["SequenceNumber"])
                    if before is not None and sequence >= before:
                        return
                    if last is not None and sequence > last:
                        raise self._gone(part)
                    arrived = _arrived(record, state)
                    if arrived:
                        yield from map(one_event, user_records(record))
                    state = {**_after(record["SequenceNumber"]), "at": None if arrived else state["at"]}
                    if sequence == last:
                        return
                caught_up = caught_up + 1 if _ended(answer) else 0
                if bounded and caught_up == CAUGHT_UP:
                    raise self._gone(part)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise self._unreadable(part.shard, e) from None
        if bounded:
            raise self._gone(part)  # a closed shard read to its end

    def _gone(self, part: ShardRange) -> KinesisInputError:
        """A range whose end its shard does not lead to: read to the shard's latest record (or past
        the end's) without meeting it, so its records are not all there any more."""
        end = part.end["after"] or part.end["from"]
        return KinesisInputError(
            f"{self.source.describe()}: shard {part.shard} no longer holds a micro-batch's records up to sequence "
            f"number {end}, where Spark's checkpoint ends it (trimmed past the stream's retention, or a checkpoint "
            "of another stream): give this input an output.path of its own, read from input.position"
        )

    def read(self, start: Offsets) -> tuple[list[bytes], Offsets]:
        """The micro-batch after `start` and its end, read here: what Spark's driver and tasks do."""
        end = self.latest(start)
        return self.between(start, end), end

    def between(self, start: Offsets, end: Offsets) -> list[bytes]:
        """The records of a micro-batch (again, after a crash): each shard from `start` to `end`."""
        return [record for part in self.ranges(start, end) for record in self.records(part)]

    def _cut(self, shard: str, state: State, closed: bool, now: int) -> State:
        """A shard's end of the next micro-batch (see the module); where it was if the shard cannot
        be read this trigger (a refusal that passes)."""
        try:
            first, ended = self._first(shard, state)
            if first is None:
                return {**state, "done": closed and ended}
            at = min(now - self.margin_ms, first.ts + self.span_ms)
            cut = self._first_at(shard, at)
            if cut is None and at - first.ts > HALVING_MS:  # nothing since: cut the records left in two
                cut = self._first_at(shard, (first.ts + at) // 2)
            if cut is not None and int(cut.sequence) > int(first.sequence):
                return _from(cut)
            last, ended = self._last(shard, first)  # what is left arrived within seconds: read here
            return {**_after(last.sequence), "done": closed and ended}
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            if _code(e) in (*PASSING, EXPIRED, None):
                return state
            raise self._unreadable(shard, e) from None

    def _first(self, shard: str, state: State, *, patient: bool = False) -> tuple[_Record | None, bool]:
        """The first record after `state` (the offset's own, where a cut left it known), or none and
        whether the shard was read to its last record; `patient` waits out every refusal that passes."""
        if state["from"] is not None and state["ts"] is not None:
            return _Record(state["from"], state["ts"]), False
        answer: dict[str, Any] = {}
        limit = 1 if state["at"] is None else max(self.source.max_records, SECOND_OF_RECORDS)
        for answer in self._pages(shard, state, limit, patient=patient):
            for record in answer["Records"]:
                if _arrived(record, state):
                    return _Record(record["SequenceNumber"], _ms(record)), False
            if _ended(answer):
                break
        return None, _ended(answer)

    def _first_at(self, shard: str, at: int) -> _Record | None:
        """The first record that arrived at `at` or later (to the second, as Kinesis takes it)."""
        for answer in self._pages(shard, _start(at), 1):
            for record in answer["Records"]:
                return _Record(record["SequenceNumber"], _ms(record))
        return None

    def _last(self, shard: str, first: _Record) -> tuple[_Record, bool]:
        """A shard's last record from `first` on, and whether the shard has ended there."""
        last, answer = first, {}
        for answer in self._pages(shard, _from(first), self.source.max_records):
            if answer["Records"]:
                last = _Record(answer["Records"][-1]["SequenceNumber"], _ms(answer["Records"][-1]))
        return last, _ended(answer)

    def _pages(self, shard: str, state: State, limit: int, *, patient: bool = False) -> Iterator[dict[str, Any]]:
        """GetRecords answers from `state` on; an expired iterator taken again after the last record
        read. The driver's stop at the shard's last record or after `CALLS_PER_TRIGGER` calls, wait
        out `DRIVER_PATIENCE` refusals that pass and leave the next to the caller; a task's
        (`patient`) go to the shard's end, waiting out every refusal that passes (`BACKOFF`)."""
        iterator: Any = None
        pauses, calls, refused = _pauses(), 0, 0
        while patient or calls < CALLS_PER_TRIGGER:
            calls += 1
            try:
                iterator = iterator or self._iterator(shard, state)
                answer: dict[str, Any] = self.client.get_records(ShardIterator=iterator, Limit=limit)
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
                if _code(e) != EXPIRED:
                    refused += 1
                    if _code(e) not in (*PASSING, None) or not (patient or refused <= DRIVER_PATIENCE):
                        raise
                    self.sleep(next(pauses))
                iterator = None
                continue
            pauses = _pauses()
            yield answer
            if answer["Records"]:
                state = _after(answer["Records"][-1]["SequenceNumber"])
            iterator = answer.get("NextShardIterator")
            if iterator is None or (not patient and _ended(answer)):
                return

    def shards_waited(self) -> list[dict[str, Any]]:
        """The stream's shards (`shards`), refusals that pass waited out (`BACKOFF`): for a start
        and an available-now run's end, which have no next trigger to wait for."""
        pauses = _pauses()
        while True:
            try:
                return self.shards()
            except _Passing:
                self.sleep(next(pauses))

    def _iterator(self, shard: str, state: Mapping[str, Any]) -> Any:
        arguments: dict[str, Any] = {"StreamName": self.source.stream, "ShardId": shard}
        if state["after"] is not None:
            arguments.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=state["after"])
        elif state["from"] is not None:
            arguments.update(ShardIteratorType="AT_SEQUENCE_NUMBER", StartingSequenceNumber=state["from"])
        elif state["at"] is not None:
            arguments.update(ShardIteratorType="AT_TIMESTAMP", Timestamp=state["at"] / 1000)
        else:
            arguments.update(ShardIteratorType="TRIM_HORIZON")
        return self.client.get_shard_iterator(**arguments)["ShardIterator"]


LATEST_PIN = "kinesis_latest_ms"
"""The file of a checkpoint that holds the time `LATEST` means for it, in milliseconds."""


def pinned(
    source: KinesisInput, storage: Storage, checkpoint: str, clock: Callable[[], float] = time.time
) -> KinesisInput:
    """The input with `LATEST` fixed at the first start on `checkpoint`, kept there (`LATEST_PIN`).
    Spark's log keeps a micro-batch's end, not its start: after a crash it asks a new reader for the
    first batch's start again, and a `LATEST` taken anew would lose that batch's records."""
    if source.position != "LATEST":
        return source
    at_ms = storage.record_once(join(checkpoint, LATEST_PIN), str(int(clock() * 1000)))
    return attrs.evolve(source, timestamp_ms=int(at_ms))


def one_event(data: bytes) -> bytes:
    """A user record as one event, whatever line ends it holds, but for the one a line-oriented
    producer adds at its end (LF, CRLF or CR), which is no more the event's than a file's line end:
    an event's last field, a time or nothing, never ends in one (the reference keeps it, and its
    `true_tstamp` fails to parse: a bad row)."""
    return data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith((b"\n", b"\r")) else data


def user_records(record: Mapping[str, Any]) -> Iterator[bytes]:
    """A Kinesis record's data, or the user records the Kinesis Producer Library aggregated in it,
    as KCL reads them: a record whose checksum fails (or that is no aggregate) is one plain record;
    a user record that cannot be read (its partition key not in the record's table) becomes a line
    that says so, a bad row downstream, never dropped in silence (the library's own iterator
    drops it and every user record after it)."""
    from aws_kinesis_agg import DIGEST_SIZE, MAGIC
    from aws_kinesis_agg.deaggregator import messages_pb2  # the library's module: it sets up the import
    from google.protobuf.message import DecodeError

    data: bytes = record["Data"]
    body = data[len(MAGIC) :]
    if (
        not data.startswith(MAGIC)
        or len(body) <= DIGEST_SIZE
        or hashlib.md5(body[:-DIGEST_SIZE]).digest() != body[-DIGEST_SIZE:]
    ):
        yield data
        return
    try:
        aggregate = messages_pb2.AggregatedRecord.FromString(body[:-DIGEST_SIZE])
    except DecodeError:
        yield data
        return
    keys, hashes = len(aggregate.partition_key_table), len(aggregate.explicit_hash_key_table)
    for n, user in enumerate(aggregate.records):
        hashed = user.HasField("explicit_hash_key_index")
        if user.partition_key_index < keys and (not hashed or user.explicit_hash_key_index < hashes):
            yield user.data
            continue
        index, table = (
            (user.partition_key_index, keys)
            if user.partition_key_index >= keys
            else (user.explicit_hash_key_index, hashes)
        )
        yield (
            f"user record {n} of the KPL record {record.get('SequenceNumber')} cannot be read: its key index "
            f"{index} is not in the record's table of {table}"
        ).encode()


def _pauses() -> Iterator[float]:
    """The waits for a refusal that passes, one after another (`BACKOFF`)."""
    pause = BACKOFF[0]
    while True:
        yield pause
        pause = min(pause * 2, BACKOFF[1])


def _arrived(record: Mapping[str, Any], state: State) -> bool:
    """Whether a record read from a shard's start time (`at`) arrived at or after it: Kinesis takes
    that time to the second, the offset holds it to the millisecond. A task keeps the time past the
    records of that second before it (`after` beside `at`), until one arrived at or after it."""
    at = state["at"] if state["from"] is None else None
    return at is None or _ms(record) >= at


def _ended(answer: Mapping[str, Any]) -> bool:
    """Whether a GetRecords answer reached the shard's last record (its end, if it is closed)."""
    return bool(answer) and (
        answer.get("NextShardIterator") is None or (not answer["Records"] and answer.get("MillisBehindLatest", 0) == 0)
    )


def _ms(record: Mapping[str, Any]) -> int:
    return int(record["ApproximateArrivalTimestamp"].timestamp() * 1000)


def _state(found: Mapping[str, Any]) -> State:
    """An offset's shard as read from the checkpoint (an older one's keys taken as they were)."""
    keys = ("after", "from", "ts", "at")
    return {**{key: found.get(key) for key in keys}, "done": bool(found.get("done", False))}


def _start(at: int | None) -> State:
    return {"after": None, "from": None, "ts": None, "at": at, "done": False}


def _after(sequence: str) -> State:
    return {**_start(None), "after": sequence}


def _from(record: _Record) -> State:
    return {**_start(None), "from": record.sequence, "ts": record.ts}


def _position(state: State) -> tuple[Any, ...]:
    return state["after"], state["from"], state["at"]


def _parents(shard: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(shard[key] for key in ("ParentShardId", "AdjacentParentShardId") if shard.get(key))


def _code(error: Exception) -> str | None:
    """A refusal's code; None for a call that got no answer (a connection that failed), which passes."""
    if isinstance(error, botocore.exceptions.ClientError):
        return str(error.response.get("Error", {}).get("Code"))
    return None


def _said(error: Exception) -> str:
    return str(error).replace("\n", " ")
