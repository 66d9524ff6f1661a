"""The shred job's output lines built in Arrow (`shred_output`): each kind of event's rows, their
counts, and rows of about one chunk's bytes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from events_manifest._snowplow import dedup, shred_output
from events_manifest._snowplow.batch import ENTITY

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def _events(**columns: list[Any]) -> dict[str, pa.Array]:
    arrow = {
        "status": pa.string(),
        "event_id": pa.string(),
        "new_event_id": pa.string(),
        "synthetic": pa.bool_(),
        "synthetic_across": pa.bool_(),
        "id_events": pa.int64(),
        "id_first": pa.bool_(),
        "collector_tstamp": pa.string(),
        "atomic_before": pa.string(),
        "atomic_after": pa.string(),
        "entities": pa.list_(ENTITY),
        "line": pa.string(),
        "errors": pa.list_(pa.string()),
    }
    rows = len(columns["status"])
    return {name: pa.array(columns.get(name, [None] * rows), kind) for name, kind in arrow.items()}


def _rows(events: dict[str, pa.Array]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of lines `output_lines` gives, and its count row (the last): each row of lines is
    followed by the null row of the line break after it, which the write leaves out."""
    batches = shred_output.output_lines(events, "T")
    assert all(batch.schema == shred_output.LINES_SCHEMA for batch in batches)
    *rows, counts = pa.Table.from_batches(batches).to_pylist()
    written, breaks = rows[::2], rows[1::2]
    assert all(row["value"] is not None and row["lines"] > 0 for row in written)
    no_line = {"kind": None, "type": None, "value": None, "lines": 0, "failure": None} | dict.fromkeys(
        shred_output.COUNTS
    )
    assert breaks == [no_line] * len(written)
    return written, counts


def test_each_kind_of_event_gives_its_rows() -> None:
    web_page = {"vendor": "com.acme", "name": "page", "format": "jsonschema", "version": "1-0-0", "data": '{"a":1}'}
    events = _events(
        status=[dedup.KEPT, dedup.KEPT, dedup.IN_BATCH, dedup.BAD],
        event_id=[A, B, B, None],
        new_event_id=[A, "new-id", None, None],
        synthetic=[False, True, None, None],
        id_events=[1, 2, 2, None],
        id_first=[True, True, False, False],
        collector_tstamp=["2026-11-01 05:00:00.000", "2026-11-01 05:00:01.000", None, None],
        atomic_before=["app\tweb", "app\tweb", None, None],
        atomic_after=["rest", "rest", None, None],
        entities=[[web_page], [], None, None],
        line=[None, None, None, "garbage"],
        errors=[None, None, None, ["no good"]],
    )
    groups, counts = _rows(events)  # the batch's counts come last, with no line
    assert (counts["kind"], counts["value"], counts["lines"]) == (None, None, 0)
    assert {name: counts[name] for name in shred_output.COUNTS if counts[name]} == {
        dedup.KEPT: 2,
        dedup.IN_BATCH: 1,
        dedup.BAD: 1,
        "synthetic": 1,
        "ids_1": 1,
        "ids_2": 1,
    }
    hierarchy = '"refRoot":"events","refTree":["events","{}"],"refParent":"events"}}}}'
    shredded_page = (
        '{"schema":{"vendor":"com.acme","name":"page","format":"jsonschema","version":"1-0-0"},"data":{"a":1},'
        f'"hierarchy":{{"rootId":"{A}","rootTstamp":"2026-11-01 05:00:00.000",' + hierarchy.format("page")
    )
    shredded_duplicate = (
        '{"schema":{"vendor":"com.snowplowanalytics.snowplow","name":"duplicate","format":"jsonschema",'
        f'"version":"1-0-0"}},"data":{{"originalEventId":"{B}"}},"hierarchy":{{"rootId":"new-id",'
        '"rootTstamp":"2026-11-01 05:00:01.000",' + hierarchy.format("duplicate")
    )
    bad = '{"line":"garbage","errors":[{"level":"error","message":"no good"}],"failure_tstamp":"T"}'
    assert [(g["kind"], g["type"], g["value"], g["lines"]) for g in groups] == [
        ("atomic", "_", f"app\tweb\t{A}\trest\napp\tweb\tnew-id\trest", 2),
        ("bad", "_", bad, 1),
        ("shredded", "com.acme/page/jsonschema/1-0-0", shredded_page, 1),
        ("shredded", "com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0", shredded_duplicate, 1),
    ]
    assert all(g[name] is None for g in groups for name in shred_output.COUNTS)


def test_a_batch_with_no_line_to_write_gives_its_counts_only() -> None:
    events = _events(status=[dedup.CROSS_BATCH], event_id=[A], id_events=[1], id_first=[True])
    assert pa.Table.from_batches(shred_output.output_lines(events, "T")).to_pylist() == [
        {"kind": None, "type": None, "value": None, "lines": 0, "failure": None}
        | dict.fromkeys(shred_output.COUNTS, 0)
        | {dedup.CROSS_BATCH: 1, "ids_1": 1}
    ]


def test_many_lines_of_one_place_come_in_rows_of_about_chunk_bytes() -> None:
    """Every line once, in order, each row's lines under `CHUNK_BYTES` but for its last one."""
    atomic = [f"app\t{n:06d}\t" + "x" * (n % 700) for n in range(3000)]
    events = _events(
        status=[dedup.KEPT] * len(atomic),
        new_event_id=[A] * len(atomic),
        atomic_before=atomic,
        atomic_after=["end"] * len(atomic),
        collector_tstamp=["2026-11-01 05:00:00.000"] * len(atomic),
        entities=[[]] * len(atomic),
    )
    rows, _ = _rows(events)
    assert len(rows) > 3 and {row["kind"] for row in rows} == {"atomic"}
    assert [text for row in rows for text in row["value"].split("\n")] == [f"{a}\t{A}\tend" for a in atomic]
    assert [row["lines"] for row in rows] == [row["value"].count("\n") + 1 for row in rows]
    for row in rows:
        *others, _ = row["value"].encode().split(b"\n")
        assert sum(map(len, others)) < shred_output.CHUNK_BYTES
