"""Enriched TSV lines split and checked a whole Arrow batch at a time (docs/enriched-events.md).

Pure pyarrow and numpy: the shred job hands each batch of lines to Python once (see `batch`),
where Arrow's C++ kernels split and check them, in the trip the JSON columns need anyway.
Spark's own `split` decodes every line to a Java string and encodes each field back: reading,
checking and cutting the lines costs about a third less CPU this way (docs/development.md).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._snowplow import legacy_bad_rows, truncation
from events_manifest._snowplow.fields import (
    ATOMIC_AFTER,
    ATOMIC_BEFORE,
    COLLECTOR_TSTAMP,
    CONTEXTS,
    DERIVED_CONTEXTS,
    ETL_TSTAMP,
    EVENT_FINGERPRINT,
    EVENT_ID,
    FIELD_NAMES,
    FIELDS,
    JSON_FIELDS,
    MIN_FIELDS,
    UNSTRUCT_EVENT,
)
from events_manifest._snowplow.legacy_bad_rows import INVALID_UTF8

UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\z"
TSTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,9}\z"
r"""Both patterns mean the same to Java (Spark's `rlike`) and to RE2 (Arrow): `\z` is the end of
the text, where Java's `$` would also match before a final line break."""

_PADDING = pa.array(["\t" * k for k in range(FIELDS - MIN_FIELDS + 1)], pa.binary())
_EPOCH = pa.scalar("1970-01-01 00:00:00", pa.binary())
_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


class Fields(NamedTuple):
    """The fields of a batch of lines, column by column; null on a line of the wrong shape."""

    event_id: pa.Array
    fingerprint: pa.Array
    collector_tstamp: pa.Array
    etl_us: pa.Array
    """etl_tstamp as epoch microseconds, null where it is not a timestamp (int64)."""
    collector_us: pa.Array
    json: tuple[pa.Array, pa.Array, pa.Array]
    """contexts, unstruct_event and derived_contexts, as bytes."""
    atomic_before: pa.Array
    """The atomic-events line's fields before event_id, tab-joined; `atomic_after` those after."""
    atomic_after: pa.Array
    errors: dict[int, list[str]]
    """The messages of each line that has any, by its row in the batch."""


def as_bytes(lines: pa.Array) -> pa.Array:
    """Lines of any Arrow string or binary type as binary of the same offsets' width, no copy."""
    large = pa.types.is_large_string(lines.type) or pa.types.is_large_binary(lines.type)
    return lines.view(pa.large_binary() if large else pa.binary())


def _layout(raw: pa.Array) -> tuple[np.ndarray, pa.Buffer]:
    """Where each value of a binary array starts in its data buffer, and where the last ends
    (int64, one more than the values), and that buffer."""
    offsets_type = np.int64 if pa.types.is_large_binary(raw.type) else np.int32
    _, offsets, data = raw.buffers()
    if not len(raw):
        return np.zeros(1, np.int64), pa.py_buffer(b"")
    bounds = np.frombuffer(offsets, offsets_type)[raw.offset : raw.offset + len(raw) + 1].astype(np.int64)
    return bounds, data if data is not None else pa.py_buffer(b"")


def _bytes(data: pa.Buffer, start: int, stop: int) -> np.ndarray:
    return np.frombuffer(data, np.uint8, stop - start, start)


class Spans:
    """Where each field of each line of a batch starts and ends in the batch's data buffer, found
    from the positions of its tabs: no line is split or copied to find them. A field past the end
    of a line (older lines have 108 to 130 fields) is empty, at the line's end."""

    def __init__(self, raw: pa.Array) -> None:
        self.offsets_type = np.int64 if pa.types.is_large_binary(raw.type) else np.int32
        bounds, self.data = _layout(raw)
        self.starts, self.ends = bounds[:-1], bounds[1:]
        first, last = int(bounds[0]), int(bounds[-1])
        tabs = np.flatnonzero(_bytes(self.data, first, last) == 9) + first
        self.tabs = np.append(tabs, last)  # a sentinel, so that any tab index is in range
        self.first_tab = np.searchsorted(tabs, self.starts)
        self.count = np.searchsorted(tabs, self.ends) - self.first_tab + 1
        """The number of fields of each line."""
        self._ends: dict[int, np.ndarray] = {}

    def end(self, index: int) -> np.ndarray:
        """Where field `index` of each line ends (at the line's end when the line is shorter);
        worked out once per field, as the checks and the atomic line ask for most fields twice."""
        found = self._ends.get(index)
        if found is None:
            inside = index < self.count - 1
            tab = self.tabs[np.where(inside, self.first_tab + index, 0)]
            found = self._ends[index] = np.where(inside, tab, self.ends)
        return found

    def start(self, index: int) -> np.ndarray:
        return self.starts if index == 0 else np.minimum(self.end(index - 1) + 1, self.ends)

    def pieces(
        self, spans: list[tuple[np.ndarray, np.ndarray]], valid: np.ndarray, *, marked: bool = False
    ) -> pa.Array:
        """Each valid line's spans (in order within the line) joined, null on the others. `marked`:
        a span may also be `truncation.SPLIT_MARK`, placed right after the batch's bytes."""
        bounds = np.stack([bound for span in spans for bound in span], axis=1)  # row: s1 e1 s2 e2 ...
        bounds = np.where(valid[:, None], bounds, self.starts[:, None])
        flat = np.append(bounds.ravel(), bounds[-1, -1] if len(bounds) else 0).astype(self.offsets_type)
        binary = pa.large_binary() if self.offsets_type is np.int64 else pa.binary()
        # the spans and the gaps between them, in one array over the same data, taken without the gaps
        data = pa.py_buffer(b"".join((memoryview(self.data), truncation.SPLIT_MARK))) if marked else self.data
        every = pa.Array.from_buffers(binary, len(flat) - 1, [None, pa.py_buffer(flat), data])
        per_line = len(spans)
        if per_line == 1:
            return every.take(pa.array(np.arange(len(valid)) * 2, mask=~valid))
        taken = every.take(np.arange(len(valid) * per_line) * 2)
        offsets = pa.array(np.arange(len(valid) + 1, dtype=np.int32) * per_line)
        return pc.binary_join(pa.ListArray.from_arrays(offsets, taken, mask=pa.array(~valid)), b"")

    def field(self, index: int, valid: np.ndarray) -> pa.Array:
        return self.pieces([(self.start(index), self.end(index))], valid)

    def columns(self, wide: np.ndarray, kind: pa.DataType) -> list[pa.Array]:
        """Every field of the lines of `wide` (lines of exactly `FIELDS` fields), column by column,
        as `kind` (binary or string): their bytes copied once, split by nothing. Lines are taken
        `COLUMN_BLOCK` at a time, whose bytes stay in the CPU's cache while their fields are
        gathered column by column (about 1.4 times as fast as the whole batch at once)."""
        rows = np.flatnonzero(wide)
        count = len(rows)
        if not count:
            return [pa.array([], kind)] * FIELDS
        bounds = np.empty((count, 2 * FIELDS), self.offsets_type)  # a line's start, end of field 0, start of 1, ...
        tabs = self.tabs[self.first_tab[rows][:, None] + np.arange(FIELDS - 1)]
        bounds[:, 0], bounds[:, -1], bounds[:, 1:-1:2] = self.starts[rows], self.ends[rows], tabs
        np.add(tabs, 1, out=bounds[:, 2:-1:2], casting="unsafe")
        flat = bounds.ravel()
        every = pa.Array.from_buffers(kind, len(flat) - 1, [None, pa.py_buffer(flat), self.data])  # fields, gaps
        blocks = []
        for first in range(0, count, COLUMN_BLOCK):
            size = min(COLUMN_BLOCK, count - first)
            by_field = (np.arange(size * FIELDS).reshape(size, FIELDS).T.ravel() + first * FIELDS) * 2
            taken = every.take(pa.array(by_field))
            blocks.append([taken.slice(j * size, size) for j in range(FIELDS)])
        return [pa.concat_arrays([block[j] for block in blocks]) for j in range(FIELDS)]


COLUMN_BLOCK = 1000
"""Lines whose fields `Spans.columns` gathers together: about 1.4 MB of enriched lines."""


def split_and_check(lines: pa.Array) -> Fields:
    """Find the fields of a batch of lines (Arrow strings), pad lines of 108 to 130 fields (older
    enrichment) to 131, cut atomic fields to their limits (`truncation`), and check the shape,
    event_id, the timestamps and UTF-8; the JSON fields are left to `entities`."""
    raw = as_bytes(lines)
    spans = Spans(raw)
    count = spans.count
    shape = (count >= MIN_FIELDS) & (count <= FIELDS)
    utf8 = _valid_utf8(raw)

    def field(index: int) -> pa.Array:
        return spans.field(index, shape)

    event_id, collector, etl = field(EVENT_ID), field(COLLECTOR_TSTAMP), field(ETL_TSTAMP)
    uuid = pc.fill_null(pc.match_substring_regex(event_id, UUID_PATTERN), True)  # null: wrong shape, said already
    etl_us, collector_us = epoch_micros(etl), epoch_micros(collector)
    cuts = _cuts(spans, shape & utf8)
    return Fields(
        event_id.view(pa.string()),
        field(EVENT_FINGERPRINT).view(pa.string()),
        collector.view(pa.string()),
        etl_us,
        collector_us,
        (field(CONTEXTS), field(UNSTRUCT_EVENT), field(DERIVED_CONTEXTS)),
        _atomic(spans, shape, ATOMIC_BEFORE, cuts).view(pa.string()),
        _atomic(spans, shape, ATOMIC_AFTER, cuts).view(pa.string()),
        _messages(
            count,
            shape,
            utf8,
            event_id,
            uuid,
            {"collector_tstamp": (collector, collector_us), "etl_tstamp": (etl, etl_us)},
        ),
    )


_LIMITED = tuple(
    (index, truncation.MAX_LENGTHS[FIELD_NAMES[index]])
    for index in (*ATOMIC_BEFORE, *ATOMIC_AFTER)
    if FIELD_NAMES[index] in truncation.MAX_LENGTHS
)
"""The atomic fields with a length limit, and their limits."""


class Gap(NamedTuple):
    """Bytes left out of each line's atomic part: after the field of index `field`, from, until; and
    the lines whose cut left half a character, where `truncation.SPLIT_MARK` stands in the gap."""

    field: int
    since: np.ndarray
    until: np.ndarray
    marked: np.ndarray | None = None


def _cuts(spans: Spans, readable: np.ndarray) -> list[Gap]:
    """For each atomic field that some line holds past its limit, the tail of it that is left
    out. A field can only be over its limit in UTF-16 units if it is in bytes: most lines decode
    nothing, and most batches only compare lengths."""
    cuts = []
    for index, limit in _LIMITED:
        start, end = spans.start(index), spans.end(index)
        over = readable & (end - start > limit)
        if over.any():
            bounds, data = _layout(spans.pieces([(start, end)], over))
            kept, split = truncation.cut(_bytes(data, int(bounds[0]), int(bounds[-1])), bounds - bounds[0], limit)
            cuts.append(Gap(index, np.where(over, start + kept, end), end, split if split.any() else None))
    return cuts


def _atomic(spans: Spans, shape: np.ndarray, indexes: tuple[int, ...], cuts: list[Gap]) -> pa.Array:
    """The atomic line's fields `indexes` (consecutive but for the JSON fields, left out with the
    tab before each), each cut where `cuts` say: slices of the line between gaps, a split mark in
    a gap where a cut left half a character. A line of 108 to 130 fields is padded to its full width."""
    first, last = indexes[0], indexes[-1]
    gaps = [Gap(index, spans.end(index - 1), spans.end(index)) for index in JSON_FIELDS if first < index < last]
    gaps = sorted([*gaps, *(gap for gap in cuts if first <= gap.field <= last)], key=lambda gap: gap.field)
    marked = any(gap.marked is not None for gap in gaps)
    mark = len(spans.data)  # where the split mark is, after the batch's bytes
    pieces, since = [], spans.start(first)
    for gap in gaps:
        pieces.append((since, gap.since))
        if marked:
            marks = gap.marked if gap.marked is not None else np.zeros(len(shape), bool)
            pieces.append(
                (np.where(marks, mark, gap.since), np.where(marks, mark + len(truncation.SPLIT_MARK), gap.since))
            )
        since = gap.until
    pieces.append((since, spans.end(last)))
    part = spans.pieces(pieces, shape, marked=marked)
    present = np.minimum(spans.count, last + 1) - first
    present -= sum((spans.count > index).astype(np.int64) for index in JSON_FIELDS if first < index < last)
    missing = np.where(shape, len(indexes) - present, 0)
    return pc.binary_join_element_wise(part, _PADDING.take(missing), b"") if missing.any() else part


def _messages(
    count: np.ndarray,
    shape: np.ndarray,
    utf8: np.ndarray,
    event_id: pa.Array,
    uuid: pa.Array,
    timestamps: dict[str, tuple[pa.Array, pa.Array]],
) -> dict[int, list[str]]:
    """Every message of each failing line, in the reference's order; Python only for those lines.
    `timestamps` maps each timestamp field's name to its texts and their epoch microseconds."""
    unread = functools.reduce(
        np.logical_or, (pc.is_null(micros).to_numpy(zero_copy_only=False) for _, micros in timestamps.values())
    )
    failing = ~shape | ~uuid.to_numpy(zero_copy_only=False) | (shape & unread) | ~utf8
    found: dict[int, list[str]] = {}
    for row in np.flatnonzero(failing).tolist():
        messages = found[row] = [] if utf8[row] else [INVALID_UTF8]
        fields = int(count[row])
        if fields < MIN_FIELDS:
            messages.append(legacy_bad_rows.too_few_fields(fields))
        elif fields > FIELDS:
            messages.append(legacy_bad_rows.too_many_fields(fields))
        else:
            if not uuid[row].as_py():
                messages.append(legacy_bad_rows.not_a_uuid(_text(event_id[row])))
            for name, (texts, micros) in timestamps.items():
                if not micros[row].is_valid:
                    messages.append(legacy_bad_rows.not_a_timestamp(name, _text(texts[row])))
    return found


def _text(value: pa.Scalar) -> str:
    text: str = value.as_py().decode("utf-8", "replace")
    return text


def _valid_utf8(raw: pa.Array) -> np.ndarray:
    """Whether each line is valid UTF-8: one C++ pass over the batch, Python only if it fails."""
    try:
        raw.view(pa.string()).validate(full=True)
        return np.ones(len(raw), dtype=bool)
    except pa.ArrowInvalid:
        return np.array([_decodes(line) for line in raw.to_pylist()], dtype=bool)


def _decodes(line: bytes | None) -> bool:
    try:
        if line is not None:
            line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def epoch_micros(texts: pa.Array) -> pa.Array:
    """UTC `yyyy-MM-dd HH:mm:ss.f` texts (bytes; `f` 1 to 9 digits) as epoch microseconds (digits
    past the sixth dropped), null where the text is not of that form or not a real moment of the
    proleptic Gregorian calendar: the one timestamp rule of the job."""
    shaped = pc.fill_null(pc.match_substring_regex(texts, TSTAMP_PATTERN), False)
    safe = pc.if_else(shaped, texts, _EPOCH)

    def number(start: int, stop: int) -> np.ndarray:
        digits = pc.binary_slice(safe, start, stop).view(pa.string())
        parsed: np.ndarray = pc.cast(pc.utf8_rpad(digits, stop - start, "0"), pa.int64()).to_numpy()
        return parsed

    year, month, day = number(0, 4), number(5, 7), number(8, 10)
    hour, minute, second, micro = number(11, 13), number(14, 16), number(17, 19), number(20, 26)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_days = _MONTH_DAYS[np.clip(month - 1, 0, 11)] + ((month == 2) & leap)
    valid = (
        shaped.to_numpy(zero_copy_only=False)
        & (year >= 1)
        & (month >= 1)
        & (month <= 12)
        & (day >= 1)
        & (day <= month_days)
    )
    valid &= (hour <= 23) & (minute <= 59) & (second <= 59)
    # days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)
    march_year = year - (month <= 2)
    era = np.floor_divide(march_year, 400)
    year_of_era = march_year - era * 400
    day_of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    days = era * 146097 + day_of_era - 719468
    micros = (days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micro
    return pa.array(micros, pa.int64(), mask=~valid)
