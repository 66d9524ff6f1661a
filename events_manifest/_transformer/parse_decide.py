"""The transformer's steps on Arrow batches, called by the jobs that read and write them (Spark's glue):

1. `Parse.batch`: each line decoded (`event`), checked against the minimum timestamp, and rendered
   as its wide-row line, or made a bad row;
2. `Decide.partition`: the rows of a partition, brought together by event id and sorted by it
   (Spark's shuffle), decided id by id as the reference decides them: natural dedup (one event per
   id and fingerprint, the earliest etl_tstamp first, an absent one earliest), the cross-batch put
   of each survivor, synthetic dedup (every event of an id kept more often than the threshold gets a
   new id and a `duplicate` context first among its derived contexts). Each batch's counts and
   entity types come out as a row of their own.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._gc import paused
from events_manifest._iglu.keys import SchemaKey
from events_manifest._jobs import steps
from events_manifest._opening.handle import Opener
from events_manifest._snowplow import dedup
from events_manifest._snowplow.fields import INDEX
from events_manifest._transformer import columnar
from events_manifest._transformer.decode.event import Entity, Event, decode
from events_manifest._transformer.decode.jvm import NANOS
from events_manifest._transformer.output import bad_rows, widerow
from events_manifest._transformer.output.entity_types import EntityType, type_text
from events_manifest._transformer.output.formats import JSON, Criterion
from events_manifest._transformer.output.parquet import ParquetColumns, atomic_values, entities_of, string_array
from events_manifest._transformer.output.shred_mode import PARTITIONS, IgluFailure, ShredModeLines, partition
from events_manifest.errors import ManifestThrottledError
from events_manifest.model import from_epoch_seconds

GOOD, BAD, DUPLICATE, META = "good", "bad", "duplicate", "meta"
"""Where a row goes: `output=good/`, `output=bad/`, dropped as a cross-batch duplicate (counted), or
a batch's counts."""
DUPLICATE_KEY = SchemaKey("com.snowplowanalytics.snowplow", "duplicate", "jsonschema", "1-0-0")
_INT64_MIN = -(2**63)

PARSED = pa.schema(
    [
        ("key", pa.string()),
        ("good", pa.bool_()),
        ("value", pa.string()),
        ("line", pa.string()),
        ("fingerprint", pa.string()),
        ("etl", pa.int64()),
        ("etl_nanos", pa.int64()),
        ("collector", pa.int64()),
        ("collector_nanos", pa.int64()),
        ("types", pa.list_(pa.string())),
    ]
)
"""A parsed line: its `key` (event id, or for a bad row the row itself, which spreads bad rows
over the partitions), its wide-row line or bad row (`value`), and what dedup and the run's message
need. Times are seconds since the epoch and the nanoseconds within the second."""

DECIDED = pa.schema(
    [
        ("output", pa.string()),
        *((name, pa.string()) for name in PARTITIONS),
        ("value", pa.string()),
        ("event", pa.int64()),
        ("collector", pa.int64()),
        ("collector_nanos", pa.int64()),
        ("types", pa.list_(pa.string())),
        ("natural", pa.int64()),
        ("lines", pa.int64()),
        ("synthetic", pa.int64()),
        ("puts", pa.int64()),
    ]
)
"""What `Decide` returns: lines for `output=good/` and `output=bad/` (in shred mode with their
partition: `shred_mode.PARTITIONS`), dropped rows (value null), and per batch a `META` row: the
entity types (`ENTITY URI`, and ` FORMAT` in shred mode), the natural duplicates it dropped and
the lines it decided (so the run's lines are counted by the code that decides each). A
good event's first line has `event` 1 and the event's collector_tstamp."""


def _seconds(nanos: int | None) -> tuple[int | None, int | None]:
    if nanos is None:
        return None, None
    seconds, rest = divmod(nanos, NANOS)
    return (seconds, rest) if -(2**63) <= seconds < 2**63 else (None, None)


def event_types(event: Event) -> list[str]:
    return [type_text(uri, entity) for uri, entity in widerow.types(event)]


@attrs.frozen
class Parse:
    """Lines to parsed rows (`PARSED`): `limits` cuts atomic strings (featureFlags.truncateAtomicFields),
    `minimum` (nanoseconds) makes earlier events `generic_error` bad rows, dated `now`."""

    limits: dict[str, int] | None = None
    minimum: int | None = None
    now: int = 0
    wide_rows: bool = True

    def batch(self, lines: pa.Array) -> pa.RecordBatch:
        """The batch's parsed rows, in its order: the lines in the shapes enrichers write parsed
        column by column (`columnar`), every other line by the per-event decoder (`per_event`)."""
        return self.parsed(lines)[0]

    @paused
    def parsed(self, lines: pa.Array) -> tuple[pa.RecordBatch, Decoding | None]:
        """`batch`, and how to decode its good events from the columns it split (None where it
        split none), for a decision where the lines are read (`Decide.rows`)."""
        text = _text(lines)
        if text is None or self.limits is not None:
            return self.per_event(lines.to_pylist()), None
        wide, columns = columnar.fields(text, json=self.wide_rows)
        taken, texts, stamps = columnar.atomic_columns(columns, self.minimum, render=self.wide_rows)
        extras, types = columnar.entity_parts(columns, taken, render=self.wide_rows)
        positions = np.flatnonzero(wide)  # each column row's place in the batch
        rows = np.flatnonzero(taken)
        at = pa.array(rows, pa.int64())
        fingerprint = columns[INDEX["event_fingerprint"]].take(at)
        etl, collector = stamps["etl_tstamp"], stamps["collector_tstamp"]
        fast = pa.RecordBatch.from_arrays(
            [
                columns[INDEX["event_id"]].take(at),
                pa.array(np.ones(len(rows), dtype=bool)),
                columnar.lines(texts, extras, rows) if self.wide_rows else pa.nulls(len(rows), pa.string()),
                pc.if_else(pc.equal(fingerprint, ""), pa.scalar(None, pa.string()), fingerprint),
                pa.array(etl.seconds[rows], mask=~etl.present[rows]),
                pa.array(etl.nanos[rows], mask=~etl.present[rows]),
                pa.array(collector.seconds[rows], pa.int64()),
                pa.array(collector.nanos[rows], pa.int64()),
                pa.array([types[row] for row in rows.tolist()], pa.list_(pa.string())),
            ],
            schema=_LINELESS,
        )
        decoding = functools.partial(columnar.decoded_columns, len(text), wide, columns, taken, stamps)
        slow = np.sort(np.concatenate([np.flatnonzero(~wide), positions[~taken]]))
        if len(slow) == 0:
            return _with_lines(fast, text), decoding
        rest = self.per_event(lines.take(pa.array(slow)).to_pylist()).drop_columns(["line"])
        order = np.argsort(np.concatenate([positions[taken], slow]), kind="stable")
        merged = pa.Table.from_batches([fast, rest]).combine_chunks().take(pa.array(order)).to_batches()[0]
        return _with_lines(merged, text), decoding

    def any_good(self, lines: pa.Array) -> bool:
        """Whether one of `lines` is a good event."""
        return bool(pc.any(self.batch(lines).column("good")).as_py())

    def per_event(self, lines: Sequence[str | bytes]) -> pa.RecordBatch:
        """Parsed rows decoded one line at a time: any line, the reference's exact errors."""
        rows: dict[str, list[Any]] = {name: [] for name in PARSED.names}
        for raw in lines:
            line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            event = decode(line, self.limits)
            bad = None
            if not isinstance(event, Event):
                bad = bad_rows.parsing_error(line, event)
            elif self.minimum is not None:
                bad = bad_rows.too_early(event, self.minimum, self.now)
            if bad is not None or not isinstance(event, Event):
                failed: tuple[Any, ...] = (bad, False, bad, *[None] * 6, [])
                for name, value in zip(PARSED.names, failed, strict=True):
                    rows[name].append(value)
                continue
            etl, etl_nanos = _seconds(event.get("etl_tstamp"))
            collector, collector_nanos = _seconds(event.get("collector_tstamp"))
            values = (
                event.get("event_id"),
                True,
                widerow.line(event) if self.wide_rows else None,
                line,
                event.get("event_fingerprint"),
                etl,
                etl_nanos,
                collector,
                collector_nanos,
                event_types(event),
            )
            for name, value in zip(PARSED.names, values, strict=True):
                rows[name].append(value)
        return _record_batch(rows, PARSED)


def _text(lines: pa.Array) -> pa.Array | None:
    """The lines as one string array, or None when one is not UTF-8 (the per-event path writes its
    bytes as the JVM does)."""
    try:
        text = lines.cast(pa.string()) if pa.types.is_binary(lines.type) else lines
    except pa.ArrowInvalid:
        return None
    return None if text.null_count else text


_LINELESS = PARSED.remove(PARSED.get_field_index("line"))


def _with_lines(parsed: pa.RecordBatch, text: pa.Array) -> pa.RecordBatch:
    """Parsed rows (`PARSED` but its `line`) of the lines `text`, in their order, given their
    lines: each good row's, as it was read (its buffers shared, not copied); none for a bad row."""
    good = parsed.column("good")
    if good.false_count == 0:
        line = text
    elif text.offset == good.offset == 0:
        line = pa.Array.from_buffers(text.type, len(text), [good.buffers()[1], *text.buffers()[1:]])
    else:
        line = pc.if_else(good, text, pa.scalar(None, text.type))
    return parsed.add_column(PARSED.get_field_index("line"), PARSED.field("line"), line)


def _record_batch(rows: dict[str, list[Any]], schema: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for field in schema:
        values = rows[field.name]
        if field.type == pa.string():
            arrays.append(string_array(values))
        else:
            arrays.append(pa.array(values, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def filled_fingerprint(event_id: str, line: str) -> str:
    """What the put stores for an event without a fingerprint: a UUID v5 of its id and its line, the
    same on every rerun (the reference draws a random one)."""
    digest = hashlib.sha256(line.encode("utf-8", "replace")).hexdigest()
    return str(uuid.uuid5(uuid.UUID(event_id), f"missing-fingerprint:{digest}"))


def new_event_id(event_id: str, fingerprint: str | None, line: str, rank: int = 0, *, random_id: bool) -> str:
    """A synthetic duplicate's new id: a UUID v5 of its id and fingerprint (its line when it has
    none; `rank` tells identical lines apart), the same on every rerun; v4 with `random_id`, as the
    reference does."""
    name = fingerprint or filled_fingerprint(event_id, line)
    return dedup.new_event_id(event_id, f"{name}:{rank}" if rank else name, random_id=random_id)


def with_new_id(event: Event, new_id: str) -> Event:
    """A synthetic duplicate re-identified: the new id, and a `duplicate` context naming the old
    one first among its derived contexts."""
    values = list(event.values)
    old = values[6]
    values[6] = new_id
    duplicate = Entity(DUPLICATE_KEY, {"originalEventId": old})
    return Event(values, event.contexts, event.unstruct, [duplicate, *event.derived])


@attrs.frozen
class Decide:
    """The dedup decisions over sorted partitions of `PARSED` rows (see the module's docstring).

    `threshold`: synthetic duplicates are ids kept more often than this (None: no synthetic dedup);
    `manifest` with `etl_seconds`: the cross-batch put; `limits` as `Parse` had them, to decode a
    line again; `skip` leaves types out of the run's message. With `shred_mode` lines, kept events are
    shredded here (their lines, or a `loader_iglu_error` dated `now`); else their wide row is the
    one `Parse` rendered (rendered again when re-identified).
    """

    natural: bool = True
    threshold: int | None = 1
    manifest: Opener | None = None
    etl_seconds: int = 0
    random_ids: bool = False
    limits: dict[str, int] | None = None
    skip: tuple[Criterion, ...] = ()
    shred_mode: ShredModeLines | None = None
    parquet: ParquetColumns | None = None
    now: int = 0

    @property
    def schema(self) -> pa.Schema:
        """`DECIDED`, and with Parquet columns a `row` of them."""
        if self.parquet is None:
            return DECIDED
        return DECIDED.append(pa.field("row", pa.struct(list(self.parquet.arrow_schema()))))

    def partition(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Decide a partition's rows, an id's rows together whatever batches they came in."""
        held: pa.RecordBatch | None = None
        for batch in batches:
            if held is not None:
                batch = pa.Table.from_batches([held, batch]).combine_chunks().to_batches()[0]
            if batch.num_rows == 0:
                continue
            keys = batch.column("key")
            last = keys[batch.num_rows - 1]
            cut = batch.num_rows
            while cut > 0 and keys[cut - 1] == last:
                cut -= 1
            held = batch.slice(cut)
            if cut:
                yield from self.rows(batch.slice(0, cut)).to_batches()
        if held is not None and held.num_rows:
            yield from self.rows(held).to_batches()

    @paused
    def rows(self, batch: pa.RecordBatch, decoding: Decoding | None = None) -> pa.Table:
        """Decide whole ids' rows (`PARSED`, an id's rows next to each other: sorted by key, or each
        id on one row): the output rows, and the batch's `META` row. The lines and wide rows stay
        in Arrow: a row kept as it came is taken from them; kept events are decoded from the
        columns `Parse` split with its `decoding` (`Parse.parsed`), else from their lines."""
        rows = batch.select(_DECIDING).to_pylist()
        for index, row in enumerate(rows):
            row["index"] = index
        lines = _Lines(batch.column("line"), decoding)
        out = _Out(self.schema, batch, shredded=self.shred_mode is not None)
        survivors: list[dict[str, Any]] = []
        natural = 0
        for row in rows:
            if not row["good"]:
                out.emit(BAD, row["index"])
        for group in _groups([row for row in rows if row["good"]]):
            kept = self._natural(group, lines)
            natural += len(group) - len(kept)
            survivors.extend(kept)
        accepted = self._put(survivors, lines)
        kept_rows: list[dict[str, Any]] = []
        for row, outcome in zip(survivors, accepted, strict=True):
            if outcome is True:
                kept_rows.append(row)
            elif outcome is False:
                out.emit(DUPLICATE, None)
            else:
                out.emit(BAD, bad_rows.runtime_error(self._event(row, lines), outcome))
        written: Kept = []
        synthetic = 0
        for group in _groups(kept_rows):
            renamed = self.threshold is not None and len(group) > self.threshold
            if renamed:
                _rank(group, lines)
                synthetic += len(group)
            written.extend((row, self._new_id(row, lines) if renamed else None) for row in group)
        write = self._writer()
        if write == self._shredded and self.limits is None:
            lines.decode(kept_rows, tsv=True)  # every kept event is written from its decoded event
        types = write(written, lines, out)
        kept_types = sorted(t for t in types if not any(c.matches(EntityType.parse(t).schema_key) for c in self.skip))
        puts = len(survivors) if self.manifest is not None else 0
        return out.batch(kept_types, natural, batch.num_rows, synthetic=synthetic, puts=puts)

    def _writer(self) -> Writer:
        """How the kept events are written in this mode: shredded, as Parquet rows, or as wide-row lines."""
        if self.shred_mode is not None:
            return self._shredded
        if self.parquet is not None:
            return self._parquet_rows
        return self._wide_rows

    def _kept_event(self, row: dict[str, Any], new_id: str | None, lines: _Lines) -> Event:
        event = self._event(row, lines)
        return event if new_id is None else with_new_id(event, new_id)

    def _wide_rows(self, kept: Kept, lines: _Lines, out: _Out) -> set[str]:
        """The wide rows `Parse` rendered, as they came; rendered again when re-identified."""
        types: set[str] = set()
        for row, new_id in kept:
            if new_id is None:
                out.emit(GOOD, row["index"])
                types.update(row["types"])
            else:
                event = self._kept_event(row, new_id, lines)
                out.emit(GOOD, widerow.line(event))
                types.update(event_types(event))
            out.count_event(row)
        return types

    def _parquet_rows(self, kept: Kept, lines: _Lines, out: _Out) -> set[str]:
        """The events' Parquet rows, built together; an event's `loader_iglu_error` where one of
        its values does not fit its column. The lines in the shapes enrichers write go column by
        column (`columnar.kept_values`), without an event; the others, and the re-identified
        events, are decoded (`parquet.atomic_values`)."""
        assert self.parquet is not None
        as_read = [i for i, (_, new_id) in enumerate(kept) if new_id is None] if self.limits is None else []
        taken, atomic, read = columnar.kept_values(lines.texts([kept[i][0] for i in as_read]))
        by_row = dict(zip([i for i, took in zip(as_read, taken.tolist(), strict=True) if took], read, strict=True))
        events = {i: self._kept_event(*kept[i], lines) for i in range(len(kept)) if i not in by_row}
        if events:
            decoded = atomic_values(list(events.values()))
            order = pa.array(np.argsort(np.array([*by_row, *events], dtype=np.int64), kind="stable"))
            atomic = {name: pa.concat_arrays([atomic[name], decoded[name]]).take(order) for name in decoded}
        entities = [by_row[i] if i in by_row else entities_of(events[i]) for i in range(len(kept))]
        out.parquet, failures = self.parquet.rows_of(atomic, entities)
        types: set[str] = set()
        for index, ((row, new_id), failed) in enumerate(zip(kept, failures, strict=True)):
            if failed is not None:
                event = events.get(index) or self._kept_event(row, new_id, lines)
                out.emit(BAD, bad_rows.iglu_error(event, failed))
                continue
            out.emit(GOOD, None)
            out.count_event(row)
            types.update(row["types"] if new_id is None else event_types(events[index]))
        return types

    def _shredded(self, kept: Kept, lines: _Lines, out: _Out) -> set[str]:
        """The kept events' shredded lines (or an event's `loader_iglu_error`); their types."""
        assert self.shred_mode is not None
        types: set[str] = set()
        for row, new_id in kept:
            event = self._kept_event(row, new_id, lines)
            shredded = self.shred_mode.lines(event, lines.atomic_tsv(row) if new_id is None else None)
            if isinstance(shredded, IgluFailure):
                out.emit(BAD, bad_rows.iglu_error(event, [shredded.item(self.now)]))
                continue
            for place, text in shredded:
                out.emit(GOOD, text, place)
            out.count_event(row)
            types.update(type_text(uri, entity, fmt) for uri, entity, fmt in self.shred_mode.types(event))
        return types

    def _natural(self, group: list[dict[str, Any]], lines: _Lines) -> list[dict[str, Any]]:
        """One event per fingerprint (each event without one kept): the earliest etl_tstamp, an absent
        one earliest; between equal times, the smaller line, so that a rerun keeps the same event."""
        if not self.natural:
            return group
        first: dict[str, dict[str, Any]] = {}
        kept = []
        for row in group:
            fingerprint = row["fingerprint"]
            if fingerprint is None:
                kept.append(row)
            elif fingerprint not in first or _earliest(row, lines) < _earliest(first[fingerprint], lines):
                first[fingerprint] = row
        return [*first.values(), *kept]

    def _put(self, rows: list[dict[str, Any]], lines: _Lines) -> list[bool | str]:
        """Each survivor's cross-batch put: accepted, refused (a duplicate), or the failure's message.
        A throttled manifest stops the run, as the reference does."""
        if self.manifest is None or not rows:
            return [True] * len(rows)
        etl = from_epoch_seconds(self.etl_seconds)
        items = [(row["key"], row["fingerprint"] or filled_fingerprint(row["key"], lines[row]), etl) for row in rows]
        outcomes = self.manifest.open().try_put_many(items)
        steps.reached("puts")
        for outcome in outcomes:
            if isinstance(outcome, ManifestThrottledError):
                raise outcome
        return [outcome if isinstance(outcome, bool) else str(outcome) for outcome in outcomes]

    def _event(self, row: dict[str, Any], lines: _Lines) -> Event:
        return lines.event(row, self.limits)

    def _new_id(self, row: dict[str, Any], lines: _Lines) -> str:
        return new_event_id(row["key"], row["fingerprint"], lines[row], row["rank"], random_id=self.random_ids)


_NO_PARTITION: tuple[str | None, ...] = (None,) * len(PARTITIONS)


class _Out:
    """The decided rows of a batch, column by column (`Decide.schema`): each row's output, its
    partition, its value (a text, or the index of the batch's own value, passed on in Arrow)."""

    def __init__(self, schema: pa.Schema, batch: pa.RecordBatch, *, shredded: bool) -> None:
        self.schema, self._batch, self._shredded = schema, batch, shredded
        self.columns: dict[str, list[Any]] = {name: [] for name in DECIDED.names}
        self.parquet: pa.StructArray | None = None
        """With Parquet, the rows that fit: the `GOOD` rows' Parquet rows, in their order."""
        self._trailing = DECIDED.names[len(PARTITIONS) + 2 :]

    def emit(self, output: str, value: str | int | None, place: tuple[str | None, ...] = _NO_PARTITION) -> None:
        """A row out; in shred mode a bad row goes under its own schema's partition."""
        if self._shredded and output == BAD and value is not None:
            text = value if isinstance(value, str) else self._batch.column("value")[value].as_py()
            key = SchemaKey.parse(bad_rows.schema_of(text))
            assert key is not None, "a bad row's schema is a schema key"
            place = partition(key, JSON)
        for name, item in zip(("output", *PARTITIONS, "value"), (output, *place, value), strict=True):
            self.columns[name].append(item)
        for name in self._trailing:
            self.columns[name].append(None)

    def count_event(self, row: dict[str, Any]) -> None:
        """Count the event once, on the line just emitted (its last), with its collector_tstamp."""
        self.columns["event"][-1], self.columns["collector"][-1] = 1, row["collector"]
        self.columns["collector_nanos"][-1] = row["collector_nanos"]

    def batch(self, types: list[str], natural: int, lines: int, *, synthetic: int = 0, puts: int = 0) -> pa.Table:
        """The rows, and last the batch's `META` row: its entity types, natural duplicates, lines,
        synthetic duplicates (kept under new ids) and manifest puts. With Parquet, in two batches:
        the rows of `parquet` (they are its rows, in its order: not copied), then the others."""
        self.emit(META, None)
        self.columns["types"][-1] = types
        self.columns["natural"][-1] = natural
        self.columns["lines"][-1] = lines
        self.columns["synthetic"][-1] = synthetic
        self.columns["puts"][-1] = puts
        made: list[str | int | None] = self.columns.pop("value")
        at = DECIDED.get_field_index("value")
        decided = _record_batch(self.columns, DECIDED.remove(at))
        decided = decided.add_column(at, DECIDED.field("value"), _values(made, self._batch))
        if self.parquet is None:
            return pa.Table.from_batches([decided])
        field = self.schema.field("row")
        good = pc.equal(decided.column("output"), GOOD)
        rows = decided.filter(good).append_column(field, self.parquet)
        others = decided.filter(pc.invert(good))
        return pa.Table.from_batches([rows, others.append_column(field, pa.nulls(others.num_rows, field.type))])


Kept = list[tuple[dict[str, Any], str | None]]
"""The kept events of a batch, in order: each one's row, and its new id if re-identified."""
Writer = Callable[[Kept, "_Lines", _Out], set[str]]
"""The kept events written in the run's mode: their entity types."""

_DECIDING = ["key", "good", "fingerprint", "etl", "etl_nanos", "collector", "collector_nanos", "types"]
"""What the decisions read of every row; its line only when a rule needs it (`_Lines`)."""


Decoding = Callable[..., tuple[list[Event | None], list[str | None]]]
"""`columnar.decoded_columns` of a batch `Parse` split, all but `tsv` given: each line's event (or
None), and with `tsv=True` its atomic TSV line."""


class _Lines:
    """A batch's lines, read one at a time and once each, where a rule needs a row's line; and
    their events, decoded a batch at a time where every kept event is needed (`decode`): from the
    columns `Parse` split with a `decoding` (the batch is the lines it parsed, in order)."""

    def __init__(self, column: pa.Array, decoding: Decoding | None = None) -> None:
        self._column, self._decoding = column, decoding
        self._read: dict[int, str] = {}
        self._events: dict[int, Event] = {}
        self._tsv: dict[int, str] = {}

    def __getitem__(self, row: dict[str, Any]) -> str:
        index: int = row["index"]
        if index not in self._read:
            self._read[index] = self._column[index].as_py()
        return self._read[index]

    def decode(self, rows: Sequence[dict[str, Any]], *, tsv: bool) -> None:
        """The events of `rows` (and with `tsv` their atomic TSV lines), decoded column by column
        (`columnar.decoded`, or the batch's `decoding`) for later `event` and `atomic_tsv` calls."""
        indexes = [row["index"] for row in rows]
        if not indexes:
            return
        if self._decoding is None:
            events, lines = columnar.decoded(self._column.take(pa.array(indexes, pa.int64())), tsv=tsv)
        else:  # the batch's every line at once, from the columns `Parse` split
            every, every_line = self._decoding(tsv=tsv)
            events, lines = [every[i] for i in indexes], [every_line[i] for i in indexes] if tsv else []
        self._events.update((index, event) for index, event in zip(indexes, events, strict=True) if event)
        self._tsv.update((index, line) for index, line in zip(indexes, lines, strict=False) if line)

    def texts(self, rows: Sequence[dict[str, Any]]) -> pa.Array:
        """The lines of `rows`, as one array."""
        return self._column.take(pa.array([row["index"] for row in rows], pa.int64()))

    def atomic_tsv(self, row: dict[str, Any]) -> str | None:
        """A good row's atomic TSV line, if `decode` made it."""
        return self._tsv.get(row["index"])

    def event(self, row: dict[str, Any], limits: dict[str, int] | None) -> Event:
        """A good row's event: decoded already, or now (`event.decode`, which also cuts to `limits`)."""
        found = self._events.get(row["index"]) if limits is None else None
        if found is None:
            decoded = decode(self[row], limits)
            assert isinstance(decoded, Event), "a good row's line decodes"
            found = decoded
        return found


def _values(values: list[str | int | None], batch: pa.RecordBatch) -> pa.Array:
    """The output's `value` column: texts made here, and indexes of the batch's own values
    (taken, not copied through Python)."""
    made = [value for value in values if isinstance(value, str)]
    source = batch.column("value")
    if not made:
        return source.take(pa.array(values, pa.int64()))
    indexes: list[int | None] = []
    next_made = len(source)
    for value in values:
        if isinstance(value, str):
            indexes.append(next_made)
            next_made += 1
        else:
            indexes.append(value)
    return pa.concat_arrays([source, string_array(made)]).take(pa.array(indexes, pa.int64()))


def _earliest(row: dict[str, Any], lines: _Lines) -> tuple[int, int, str]:
    etl = row["etl"]
    return (_INT64_MIN, 0, lines[row]) if etl is None else (etl, row["etl_nanos"], lines[row])


def _rank(group: list[dict[str, Any]], lines: _Lines) -> None:
    """Number the rows of an id that are alike (one fingerprint, or no fingerprint and one line),
    in line order, so that each gets a new id of its own."""
    seen: dict[str, int] = {}
    for row in sorted(group, key=lambda row: lines[row]):
        alike = row["fingerprint"] or lines[row]
        row["rank"] = seen.get(alike, 0)
        seen[alike] = row["rank"] + 1


def _groups(rows: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Runs of rows of one key (rows sorted by key)."""
    group: list[dict[str, Any]] = []
    for row in rows:
        if group and row["key"] != group[0]["key"]:
            yield group
            group = []
        group.append(row)
    if group:
        yield group
