"""A batch of enriched lines through the engine, as Arrow arrays: checked (fields, JSON columns,
and with a resolver configuration each entity against its schema), decided (`dedup.Dedup`) and
turned into the shred job's output lines (`shred_output`).

`Shred` is what a Spark job hands its Arrow batches to (`mapInArrow`); a Python consumer calls it
on batches of its own.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._iglu.keys import SchemaKey
from events_manifest._iglu.resolver import ResolverConfig, resolver_for
from events_manifest._jobs import steps
from events_manifest._snowplow import legacy_bad_rows, parsing, shred_output
from events_manifest._snowplow.dedup import Dedup
from events_manifest._snowplow.entities import Found, IgluParts, read_rows
from events_manifest.errors import ManifestError

ENTITY = pa.struct([(name, pa.string()) for name in ("vendor", "name", "format", "version", "data")])
"""An entity of a checked line: its schema's parts and its `data`, byte for byte as received."""
CHECKED = pa.schema(
    [
        *((name, pa.string()) for name in ("event_id", "fingerprint", "collector_tstamp")),
        *((name, pa.int64()) for name in ("etl_us", "collector_us")),
        ("errors", pa.list_(pa.string())),
        ("valid", pa.bool_()),
        ("entities", pa.list_(ENTITY)),
        *((name, pa.string()) for name in ("atomic_before", "atomic_after")),
    ]
)
"""What `check` finds of each line; `errors` holds every message, and a line is `valid` when it has
none (`legacy_bad_rows.without_messages`)."""


def check(lines: pa.Array, iglu: ResolverConfig | None = None) -> dict[str, pa.Array]:
    """The columns of `CHECKED` for a batch of lines: their fields, their JSON columns, and with
    an `iglu` resolver configuration their entities against their schemas.

    One line never fails the batch: where the checks fail in a way no rule foresaw (a bug, not a
    `ManifestError`), the batch is checked again in halves, down to the lines that fail alone,
    which become bad rows with the error (`legacy_bad_rows.unexpected_error`); the other lines go on."""
    try:
        return _check(lines, iglu)
    except ManifestError:
        raise
    except Exception as error:
        if len(lines) == 1:
            return _unexpected(lines, error)
        half = len(lines) // 2
        parts = [check(lines.slice(0, half), iglu), check(lines.slice(half), iglu)]
        return {
            name: pa.concat_arrays([part[name].cast(CHECKED.field(name).type) for part in parts]) for name in parts[0]
        }


def _unexpected(line: pa.Array, error: Exception) -> dict[str, pa.Array]:
    """The checked columns of one line that failed unforeseen: null fields, that one message."""
    columns = {field.name: pa.nulls(1, field.type) for field in CHECKED}
    columns["errors"] = pa.array([[legacy_bad_rows.unexpected_error(error)]], CHECKED.field("errors").type)
    columns["valid"] = pa.array([False])
    columns["entities"] = pa.array([[]], CHECKED.field("entities").type)
    return columns


def _check(lines: pa.Array, iglu: ResolverConfig | None) -> dict[str, pa.Array]:
    found = parsing.split_and_check(lines)
    sdjs = read_rows(*(column.to_pylist() for column in found.json))
    of_fields = {row: listed for row, listed in found.errors.items() if listed}
    of_schemas = _schema_errors(sdjs, iglu, skip=of_fields.keys()) if iglu is not None else {}
    errors = _errors(len(lines), of_fields, sdjs, of_schemas)
    return {
        "event_id": found.event_id,
        "fingerprint": found.fingerprint,
        "collector_tstamp": found.collector_tstamp,
        "etl_us": found.etl_us,
        "collector_us": found.collector_us,
        "errors": errors,
        "valid": pa.array(legacy_bad_rows.without_messages(errors)),
        "entities": _entities(sdjs),
        "atomic_before": found.atomic_before,
        "atomic_after": found.atomic_after,
    }


def decide(lines: pa.Array, dedup: Dedup, iglu: ResolverConfig | None = None) -> dict[str, pa.Array]:
    """A batch of lines checked (`check`, with the lines themselves as `line`) and decided by `dedup`:
    every path from lines to decisions, the Spark jobs' and a Python consumer's."""
    checked = check(lines, iglu)
    checked["line"] = lines
    return dedup.decide(checked)


def any_valid(texts: list[str], iglu: ResolverConfig | None = None) -> bool:
    """Whether any of these lines passes every check (`check`)."""
    return bool(pc.any(check(pa.array(texts, pa.string()), iglu)["valid"]).as_py())


def _schema_errors(found: Found, iglu: ResolverConfig, skip: Collection[int]) -> dict[int, list[str]]:
    """Each line's messages for its entities that fail their schemas (none for a valid line), but
    for the lines to `skip` (a field failed: the reference reads no JSON of theirs)."""
    resolver = resolver_for(iglu)
    failing: dict[int, list[str]] = {}
    start = 0
    for row, end in enumerate(found.entity_ends):
        if row in skip:
            start = end
            continue
        for parts, data in zip(found.parts[start:end], found.data[start:end], strict=True):
            messages = resolver.validate_data(SchemaKey(*parts), json.loads(data))
            if messages:
                failing.setdefault(row, []).extend(messages)
        start = end
    return failing


def _entities(found: Found) -> pa.ListArray:
    distinct: dict[IgluParts, int] = {}
    schema_of = pa.array([distinct.setdefault(iglu, len(distinct)) for iglu in found.parts], pa.int32())
    parts = zip(*distinct, strict=True) if distinct else [()] * 4
    columns = [pa.array(part, pa.string()).take(schema_of) for part in parts]
    data = pa.array(found.data, pa.binary()).cast(pa.string())  # UTF-8 already checked
    return lists(found.entity_ends, pa.StructArray.from_arrays([*columns, data], fields=list(ENTITY)))


def _errors(rows: int, of_fields: dict[int, list[str]], found: Found, of_schemas: dict[int, list[str]]) -> pa.ListArray:
    """Each line's field messages; for a line without any, its JSON messages then its schema
    messages (the reference stops at a field's error). Python only for lines that have any."""
    json_ends = np.array([0, *found.error_ends], dtype=np.int64)
    counts = np.diff(json_ends)
    for row, listed in of_fields.items():
        counts[row] = len(listed)
    for row, listed in of_schemas.items():
        counts[row] += len(listed)
    messages: list[str] = []
    for row in np.flatnonzero(counts).tolist():
        if row in of_fields:
            messages += of_fields[row]
            continue
        messages += found.errors[json_ends[row] : json_ends[row + 1]]
        messages += of_schemas.get(row, ())
    return lists(np.cumsum(counts).tolist(), pa.array(messages, pa.string()))


def lists(ends: list[int], values: pa.Array) -> pa.ListArray:
    """Row i of the result holds `values[ends[i-1]:ends[i]]`."""
    return pa.ListArray.from_arrays(pa.array([0, *ends], pa.int32()), values)


@attrs.frozen
class Shred:
    """The one way lines become the shred job's output lines, whichever path brings them: each
    batch checked (`check`), decided (`dedup.Dedup`) and written out (`shred_output`)."""

    dedup: Dedup
    failure_tstamp: str
    iglu: ResolverConfig | None = None

    def lines_of(self, batch_lines: pa.Array) -> list[pa.RecordBatch]:
        """The output lines of a batch of input lines holding every line of each of their ids."""
        decided = decide(batch_lines, self.dedup, self.iglu)
        steps.reached("puts")
        return shred_output.output_lines(decided, self.failure_tstamp)

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Lines (column `line`) whose id is on no other line of the batch, as they are read."""
        return self._until_failed(batch.column("line") for batch in batches)

    def grouped(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Lines sorted by `key` (a number per event id), then input order: each batch is decided
        up to its last key, whose lines go with the next batch, so that every line of an id is
        decided in one call."""
        return self._until_failed(_by_whole_keys(batches))

    def _until_failed(self, pieces: Iterator[pa.Array]) -> Iterator[pa.RecordBatch]:
        """The output lines of each piece, until the manifest fails as a whole: then one failure
        row (`shred_output.failed`), and the rest of the input is read through, not decided."""
        for lines in pieces:
            try:
                output = self.lines_of(lines)
            except ManifestError as e:
                yield shred_output.failed(e)
                for _ in pieces:
                    pass
                return
            yield from output


def _by_whole_keys(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Array]:
    """The lines of batches sorted by `key`, cut so that all the lines of a key are in one piece."""
    held: pa.RecordBatch | None = None
    for batch in batches:
        if held is not None:
            batch = pa.Table.from_batches([held, batch]).combine_chunks().to_batches()[0]
        keys = batch.column("key").to_numpy()
        cut = int(np.searchsorted(keys, keys[-1])) if len(keys) else 0
        if cut:
            yield batch.column("line").slice(0, cut)
        held = batch.slice(cut)
    if held is not None and len(held):
        yield held.column("line")
