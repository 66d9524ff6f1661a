"""Generic dedup of any records (mappings) through a manifest, in plain Python.

Each record lands in exactly one of four outcomes: unique, duplicate, expired, error.

    with Deduplicator(manifest, key=["user_id", "order_id"], expiry=Expiry("ts", "1d")) as dedup:
        for decision in dedup.classify(records):
            ...

A `Deduplicator` is one run: records repeating within it are duplicates (remembered in memory,
or in a temporary file with `on_disk=True`); records seen by earlier runs are duplicates through
the manifest, under the run's etl time. The run is recorded in the manifest's ledger when it
starts (which hands it an etl time of its own) and finished when it is closed without an error.
Rerunning the same input (same `item`, or the same `etl_time`) after a crash gives the same
outcomes, because the manifest accepts a rerun.
`AsyncDeduplicator` is the same over an async manifest and async iterables.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

import attrs

from events_manifest._manifest.async_contract import AsyncEventsManifest
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import Run
from events_manifest._opening.urls import parse_duration
from events_manifest.errors import ManifestConfigError, ManifestRequestError
from events_manifest.model import MAX_FINGERPRINT_BYTES, UUID_TEXT, PutItem

KEY_NAMESPACE = uuid.UUID("6f0c7f4e-5b8a-4d47-9a6e-2f1d3c0b9e51")
"""Keys that are not UUIDs become UUID v5 of their text in this namespace (the manifest's ids are UUIDs)."""

Record = Mapping[str, Any]
KeySpec = Sequence[str] | Callable[[Record], Any]


class Outcome(enum.StrEnum):
    """Where a record goes: the first copy of an event, a later copy, too old to decide, or unreadable."""

    UNIQUE = "unique"
    DUPLICATE = "duplicate"
    EXPIRED = "expired"
    ERROR = "error"


@attrs.frozen
class Decision:
    """What became of one record; `reason` says why for errors and duplicates."""

    outcome: Outcome
    record: Any
    reason: str | None = None


@attrs.frozen
class Unreadable:
    """A record its reader could not read (say, a line that is not JSON): pass it on anyway, and it
    comes out as an error with this reason, in its place."""

    text: str
    reason: str


def check_specs(key: object, fingerprint: object, names: str = "field names") -> None:
    """Key and fingerprint are lists of names (or functions), never a lone string."""
    if isinstance(key, str) or isinstance(fingerprint, str):
        raise ManifestConfigError(f"key and fingerprint take a list of {names}, not a string")


def _period(value: timedelta | str) -> timedelta:
    return value if isinstance(value, timedelta) else parse_duration(value, "expiry period")


@attrs.frozen
class Expiry:
    """A record whose `field` is older than the latest value minus `period` is expired: the latest
    seen so far in a stream of records (the Python deduplicators), the latest of the whole batch
    in the Spark dedup (a batch has no order).

    Values: datetimes (naive = UTC), ISO 8601 text, or epoch seconds.
    """

    field: str
    period: timedelta = attrs.field(converter=_period)

    def expired(self, seconds: float, latest: float) -> bool:
        """The rule, written once: older than `latest` minus the period."""
        return seconds < latest - self.period.total_seconds()


def key_text(values: Sequence[Any]) -> str:
    """Key values as one text: strings as they are, other values as JSON, joined by U+001F."""
    return "\x1f".join(v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str) for v in values)


_NAMESPACE_BYTES = KEY_NAMESPACE.bytes


def event_id_of(text: str) -> str:
    """The manifest id of a key: itself (lowercased) if it is UUID text, else UUID v5 of its text
    (`uuid.uuid5(KEY_NAMESPACE, text)`, computed without building UUID objects: 5x faster)."""
    if UUID_TEXT.fullmatch(text):
        return text.lower()
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + text.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def fields_hash(values: Sequence[Any]) -> str:
    """The fingerprint of chosen fields: SHA-256 of their `key_text` (the Spark dedup agrees)."""
    return hashlib.sha256(key_text(values).encode("utf-8")).hexdigest()


def canonical_hash(value: Any) -> str:
    """The default fingerprint of a record, the same in the Spark dedup: a SHA-256 of its JSON with
    keys sorted, no whitespace, members whose value is null left out (a null field and a missing
    one are the same record, as a DataFrame's row and its JSON line are), other types by `str`."""
    text = json.dumps(_without_nulls(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _without_nulls(member) for key, member in value.items() if member is not None}
    if isinstance(value, list | tuple):
        return [_without_nulls(item) for item in value]
    return value


def to_timestamp(value: Any) -> float:
    """Epoch seconds of a datetime, ISO 8601 text or number; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    raise ValueError


class _Error(Exception):
    """A record that cannot be classified; the message is its reason."""


def _fields(record: Any, names: Sequence[str], what: str) -> list[Any]:
    values = []
    for name in names:
        if name not in record:
            raise _Error(f"{what} field [{name}] is missing")
        if record[name] is None:
            raise _Error(f"{what} field [{name}] is null")
        values.append(record[name])
    return values


REPEATED = "repeated within this run"
SEEN = "seen by an earlier run"


def manifest_failure(error: Exception) -> str:
    """The reason of a record whose put failed on its own (after the manifest's retries)."""
    return f"manifest: {error}"


@attrs.frozen
class Identified:
    """What a record is to the manifest: its event id and fingerprint, and its expiry value
    (epoch seconds); or why it cannot be classified (`error`)."""

    event_id: str | None = None
    fingerprint: str | None = None
    seconds: float | None = None
    error: str | None = None


@attrs.frozen
class Identify:
    """How a run turns a record into its `Identified`: `key` and `fingerprint` (field names or
    functions; the default fingerprint hashes the whole record) and the `expiry` field. The same
    for the Python deduplicators and the Spark dedup, which calls it on Arrow batches."""

    key: KeySpec
    fingerprint: KeySpec | None = None
    expiry: Expiry | None = None

    def __attrs_post_init__(self) -> None:
        check_specs(self.key, self.fingerprint, "field names (or a function)")
        if not callable(self.key) and not self.key:
            raise ManifestConfigError("key needs at least one field name")

    def __call__(self, record: Any) -> Identified:
        try:
            event_id, fingerprint = self._pair(record)
            return Identified(event_id, fingerprint, self._seconds(record))
        except _Error as e:
            return Identified(error=str(e))
        except RecursionError:
            return Identified(error="record is nested too deeply to be read")

    def _pair(self, record: Any) -> tuple[str, str]:
        if isinstance(record, Unreadable):
            raise _Error(record.reason)
        if not isinstance(record, Mapping):
            raise _Error(f"record is not a mapping (got {type(record).__name__})")
        if callable(self.key):
            try:
                key = self.key(record)
            except Exception as e:
                raise _Error(f"key function failed: {e!r}") from None
            if key is None:
                raise _Error("key function returned None")
            text = key_text(key if isinstance(key, list | tuple) else [key])
        else:
            text = key_text(_fields(record, self.key, "key"))
        if self.fingerprint is None:
            fingerprint = canonical_hash(record)
        elif callable(self.fingerprint):
            try:
                fingerprint = str(self.fingerprint(record))
            except Exception as e:
                raise _Error(f"fingerprint function failed: {e!r}") from None
            if not fingerprint or len(fingerprint.encode()) > MAX_FINGERPRINT_BYTES:
                raise _Error(f"fingerprint must be 1 to {MAX_FINGERPRINT_BYTES} bytes (got {len(fingerprint)})")
        else:
            fingerprint = fields_hash(_fields(record, self.fingerprint, "fingerprint"))
        return event_id_of(text), fingerprint

    def _seconds(self, record: Any) -> float | None:
        if self.expiry is None:
            return None
        name = self.expiry.field
        if name not in record or record[name] is None:
            raise _Error(f"expiry field [{name}] is missing")
        try:
            return to_timestamp(record[name])
        except (ValueError, TypeError, OverflowError):
            raise _Error(
                f"expiry field [{name}]: [{str(record[name])[:80]}] is not a timestamp "
                "(ISO 8601 text, epoch seconds or a datetime)"
            ) from None


class Seen:
    """The pairs seen so far in a run: a set of digests, or a table in a temporary file
    (`on_disk`), or, for records that come sorted by pair (`sorted_pairs`), only the last pair."""

    def __init__(self, *, on_disk: bool = False, sorted_pairs: bool = False) -> None:
        self.on_disk, self.sorted_pairs = on_disk, sorted_pairs
        self._memory: set[bytes] = set()
        self._last: bytes | None = None
        self._db: sqlite3.Connection | None = None
        self._path: str | None = None

    @staticmethod
    def _digest(event_id: str, fingerprint: str) -> bytes:
        return hashlib.blake2b(f"{event_id}\x00{fingerprint}".encode(), digest_size=16).digest()

    def add(self, event_id: str, fingerprint: str) -> bool:
        """Remember a pair; False if it was already there."""
        digest = self._digest(event_id, fingerprint)
        if self.sorted_pairs:
            new, self._last = digest != self._last, digest
            return new
        if not self.on_disk:
            if digest in self._memory:
                return False
            self._memory.add(digest)
            return True
        db = self._open()
        return db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (digest,)).rowcount == 1

    def forget(self, event_id: str, fingerprint: str) -> None:
        digest = self._digest(event_id, fingerprint)
        if self.sorted_pairs:
            self._last = None if self._last == digest else self._last
        elif self.on_disk:
            self._open().execute("DELETE FROM seen WHERE k = ?", (digest,))
        else:
            self._memory.discard(digest)

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            handle, self._path = tempfile.mkstemp(prefix="events-manifest-seen-", suffix=".db")
            os.close(handle)
            self._db = sqlite3.connect(self._path, isolation_level=None)
            self._db.executescript(
                "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE seen (k BLOB PRIMARY KEY) WITHOUT ROWID"
            )
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._path is not None:
            os.unlink(self._path)
            self._path = None
        self._memory.clear()
        self._last = None


@attrs.define
class Chunk:
    """Records on their way through a run: decided already, or waiting for the manifest."""

    records: list[Any]
    decisions: list[Decision | None]
    waiting: list[tuple[int, str, str]]  # (position, event id, fingerprint)

    def items(self, etl_time: datetime) -> list[PutItem]:
        return [(event_id, fingerprint, etl_time) for _, event_id, fingerprint in self.waiting]


class Classifier:
    """The decision of a run, in input order, for identified records: an error stays one; an
    expired record (`Expiry.expired` against `latest`) is expired; a pair seen before in the run is
    a duplicate; the others go to the manifest, whose answer makes them unique or duplicates (or
    errors, when their put failed). `latest` is the latest expiry value seen so far, or fixed for
    the whole run (the Spark dedup: a batch has no order, its maximum is known before)."""

    def __init__(self, expiry: Expiry | None, seen: Seen, *, latest: float | None = None) -> None:
        self.expiry, self.seen = expiry, seen
        self.latest, self._fixed = latest, latest is not None
        self.counts: dict[Outcome, int] = dict.fromkeys(Outcome, 0)

    def prepare(self, records: list[Any], identified: Sequence[Identified]) -> Chunk:
        """Decide what needs no manifest (errors, expired, repeats within the run)."""
        chunk = Chunk(records, [None] * len(records), [])
        for position, (record, found) in enumerate(zip(records, identified, strict=True)):
            if found.error is not None or found.event_id is None or found.fingerprint is None:
                chunk.decisions[position] = Decision(Outcome.ERROR, record, found.error)
            elif self._expired(found.seconds):
                chunk.decisions[position] = Decision(Outcome.EXPIRED, record)
            elif not self.seen.add(found.event_id, found.fingerprint):
                chunk.decisions[position] = Decision(Outcome.DUPLICATE, record, REPEATED)
            else:
                chunk.waiting.append((position, found.event_id, found.fingerprint))
        return chunk

    def _expired(self, seconds: float | None) -> bool:
        if self.expiry is None or seconds is None:
            return False
        if not self._fixed:
            self.latest = seconds if self.latest is None else max(self.latest, seconds)
        return self.expiry.expired(seconds, self.latest if self.latest is not None else seconds)

    def finish(self, chunk: Chunk, answers: Sequence[bool | ManifestRequestError]) -> list[Decision]:
        """Complete the chunk with the manifest's answers, in input order."""
        for (position, event_id, fingerprint), answer in zip(chunk.waiting, answers, strict=True):
            record = chunk.records[position]
            if isinstance(answer, ManifestRequestError):
                self.seen.forget(event_id, fingerprint)  # a later copy gets its own chance
                chunk.decisions[position] = Decision(Outcome.ERROR, record, manifest_failure(answer))
            elif answer:
                chunk.decisions[position] = Decision(Outcome.UNIQUE, record)
            else:
                chunk.decisions[position] = Decision(Outcome.DUPLICATE, record, SEEN)
        decided = [d for d in chunk.decisions if d is not None]
        for decision in decided:
            self.counts[decision.outcome] += 1
        return decided


class _Run:
    """The state both deduplicators share; they differ only in how they call the manifest."""

    def __init__(
        self,
        key: KeySpec,
        fingerprint: KeySpec | None,
        expiry: Expiry | None,
        on_disk: bool,
        chunk_size: int,
    ) -> None:
        if chunk_size < 1:
            raise ManifestConfigError(f"chunk_size [{chunk_size}] must be at least 1")
        self.identify = Identify(key, fingerprint, expiry)
        self.classifier = Classifier(expiry, Seen(on_disk=on_disk))
        self.ledger: Run | None = None
        self.chunk_size = chunk_size

    @property
    def counts(self) -> dict[Outcome, int]:
        return self.classifier.counts

    @property
    def seen(self) -> Seen:
        return self.classifier.seen

    def prepare(self, records: list[Any]) -> Chunk:
        return self.classifier.prepare(records, [self.identify(record) for record in records])

    def started(self) -> Run:
        """The run's ledger record; an error before it started."""
        if self.ledger is None:
            raise ManifestConfigError("the run has not started: use `with Deduplicator(...)` or call start()")
        return self.ledger

    def items(self, chunk: Chunk) -> list[PutItem]:
        return chunk.items(self.started().etl_time)

    def finish(self, chunk: Chunk, answers: list[bool | ManifestRequestError]) -> list[Decision]:
        return self.classifier.finish(chunk, answers)


def _chunks(records: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


M = TypeVar("M")


class _Deduplicator(Generic[M]):
    """What both deduplicators hold: the manifest and one run's state.

    `key`: field names or a function of the record; `fingerprint`: field names, a function, or by
    default a hash of the whole record; `expiry`: an `Expiry`; `item`: what the run reads (a file
    name, a topic partition), so that a rerun of an unfinished run finishes it; `etl_time`: the
    run's etl time (default: handed out by the manifest's ledger; pass the same one to rerun after
    a crash); `source`: the identity of the input (its size, a digest), which the ledger keeps to
    refuse another input under the same item; `output`: where the run writes; `rerun`: run an
    item the ledger says was delivered again, on purpose; `on_disk`: remember the run's pairs in a
    temporary file instead of memory; `chunk_size`: records per manifest call.
    """

    def __init__(
        self,
        manifest: M,
        *,
        key: KeySpec,
        fingerprint: KeySpec | None = None,
        expiry: Expiry | None = None,
        item: str | None = None,
        etl_time: datetime | None = None,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        on_disk: bool = False,
        chunk_size: int = 1000,
    ) -> None:
        self.manifest = manifest
        self.item, self._requested = item, etl_time
        self._source, self._output, self._rerun = source, output, rerun
        self._run = _Run(key, fingerprint, expiry, on_disk, chunk_size)

    def _run_options(self) -> dict[str, Any]:
        """What `start_run` is told besides the item and etl time, by both twins."""
        return {
            "explicit": self._requested is not None,
            "source": self._source,
            "output": self._output,
            "rerun": self._rerun,
        }

    @property
    def run(self) -> Run:
        """The run's record in the manifest's ledger (once started)."""
        return self._run.started()

    @property
    def etl_time(self) -> datetime:
        """The run's etl time, to pass again when rerunning the same input after a failure."""
        return self._run.started().etl_time

    @property
    def counts(self) -> dict[Outcome, int]:
        """Records per outcome so far."""
        return dict(self._run.counts)


class Deduplicator(_Deduplicator[DuplicateStorage]):
    """One dedup run over records through a manifest; see the module docstring and `_Deduplicator`."""

    def start(self) -> Run:
        """Record the run in the manifest's ledger (done by `with` and the first classify)."""
        if self._run.ledger is None:
            self._run.ledger = self.manifest.start_run(self.item, self._requested, **self._run_options())
        return self._run.ledger

    def classify(self, records: Iterable[Any]) -> Iterator[Decision]:
        """A decision per record, in input order, lazily: memory stays bounded by `chunk_size`."""
        self.start()
        for records_chunk in _chunks(records, self._run.chunk_size):
            chunk = self._run.prepare(records_chunk)
            answers = self.manifest.try_put_many(self._run.items(chunk)) if chunk.waiting else []
            yield from self._run.finish(chunk, answers)

    def unique(self, records: Iterable[Any]) -> Iterator[Any]:
        """Only the unique records."""
        return (d.record for d in self.classify(records) if d.outcome is Outcome.UNIQUE)

    def close(self, *, finished: bool = True) -> None:
        """Record the run as finished (unless `finished` is False: a failed run, to be rerun) and
        forget its pairs; the manifest stays open: it is the caller's."""
        self._run.seen.close()
        if self._run.ledger is not None and not self._run.ledger.finished:
            if finished:
                self._run.ledger = self.manifest.finish_run(self._run.ledger)
            else:
                self.manifest.abandon_run(self._run.ledger)

    def __enter__(self) -> Deduplicator:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(finished=exc_type is None)


class AsyncDeduplicator(_Deduplicator[AsyncEventsManifest]):
    """`Deduplicator` over an async manifest (see `events_manifest.aio`) and (async) iterables."""

    async def start(self) -> Run:
        """Record the run in the manifest's ledger (done by `async with` and the first classify)."""
        if self._run.ledger is None:
            self._run.ledger = await self.manifest.start_run(self.item, self._requested, **self._run_options())
        return self._run.ledger

    async def classify(self, records: AsyncIterable[Any] | Iterable[Any]) -> AsyncIterator[Decision]:
        await self.start()
        async for records_chunk in _async_chunks(records, self._run.chunk_size):
            chunk = self._run.prepare(records_chunk)
            answers = await self.manifest.try_put_many(self._run.items(chunk)) if chunk.waiting else []
            for decision in self._run.finish(chunk, answers):
                yield decision

    async def unique(self, records: AsyncIterable[Any] | Iterable[Any]) -> AsyncIterator[Any]:
        async for decision in self.classify(records):
            if decision.outcome is Outcome.UNIQUE:
                yield decision.record

    async def close(self, *, finished: bool = True) -> None:
        """`Deduplicator.close`."""
        self._run.seen.close()
        if self._run.ledger is not None and not self._run.ledger.finished:
            if finished:
                self._run.ledger = await self.manifest.finish_run(self._run.ledger)
            else:
                await self.manifest.abandon_run(self._run.ledger)

    async def __aenter__(self) -> AsyncDeduplicator:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        await self.close(finished=exc_type is None)


async def _async_chunks(records: AsyncIterable[Any] | Iterable[Any], size: int) -> AsyncIterator[list[Any]]:
    if not isinstance(records, AsyncIterable):
        for chunk in _chunks(records, size):
            yield chunk
        return
    buffer: list[Any] = []
    async for record in records:
        buffer.append(record)
        if len(buffer) == size:
            yield buffer
            buffer = []
    if buffer:
        yield buffer
