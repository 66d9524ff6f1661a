"""The output lines built in Arrow (`lines`): bad rows as Spark's JSON writer wrote them, and each
kind of event's rows."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from spark_integration import lines
from spark_integration.udfs import ENTITY_TYPE

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def _hostile(rng: random.Random) -> bytes:
    pieces = [b"\t", b'"', b"\\", b"/", b"\x00", b"\x1f", b"\x7f", b"\r", b"\x0c", b"\x08"]
    pieces += ["é", "\u2028", "\u2029", "😀", "\ufeff"]  # type: ignore[list-item]
    pieces += [b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]
    pieces += [b"plain text "]
    chosen = rng.choices(pieces, k=rng.randint(0, 12))
    return b"".join(p.encode() if isinstance(p, str) else p for p in chosen)


@pytest.mark.spark
def test_bad_rows_are_the_json_spark_writes(spark: Any) -> None:
    """The input line (invalid UTF-8 shown as U+FFFD) and the messages, escaped as Spark's
    `to_json` escapes them, byte for byte."""
    rng = random.Random(7)
    samples = [(_hostile(rng), [_hostile(rng).decode("utf-8", "replace")]) for _ in range(400)]
    frame = spark.createDataFrame(samples, "line binary, messages array<string>")
    errors = F.transform("messages", lambda m: F.struct(F.lit("error").alias("level"), m.alias("message")))
    document = F.struct(
        F.make_valid_utf8(F.col("line").cast("string")).alias("line"),
        errors.alias("errors"),
        F.lit("2026-11-23T08:00:00.000Z").alias("failure_tstamp"),
    )
    by_spark = [row[0] for row in frame.select(F.to_json(document)).collect()]
    by_python = [lines.bad_row(line, messages, "2026-11-23T08:00:00.000Z") for line, messages in samples]
    assert by_python == by_spark


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
        "entities": pa.list_(pa.struct([(field.name, pa.string()) for field in ENTITY_TYPE.fields])),
        "line": pa.string(),
        "errors": pa.list_(pa.string()),
    }
    rows = len(columns["status"])
    return {name: pa.array(columns.get(name, [None] * rows), kind) for name, kind in arrow.items()}


def test_each_kind_of_event_gives_its_rows() -> None:
    web_page = {"vendor": "com.acme", "name": "page", "format": "jsonschema", "version": "1-0-0", "data": '{"a":1}'}
    events = _events(
        status=[lines.KEPT, lines.KEPT, lines.IN_BATCH, lines.BAD],
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
    per_event, per_entity = lines.output_lines(events, "T")
    assert per_event.schema == per_entity.schema == lines.LINES_SCHEMA
    # in the order of the partitioned write: by kind, a dropped duplicate (no line) last
    assert per_event.column("value").to_pylist() == [
        f"app\tweb\t{A}\trest",
        "app\tweb\tnew-id\trest",
        '{"line":"garbage","errors":[{"level":"error","message":"no good"}],"failure_tstamp":"T"}',
        None,
    ]
    assert per_event.column("kind").to_pylist() == ["atomic", "atomic", "bad", None]
    assert per_event.column("status").to_pylist() == [lines.KEPT, lines.KEPT, lines.BAD, lines.IN_BATCH]
    assert per_event.column("id_events").to_pylist() == [1, 2, None, 2]
    hierarchy = '"refRoot":"events","refTree":["events","{}"],"refParent":"events"}}}}'
    assert per_entity.to_pydict() == {
        "kind": ["shredded", "shredded"],
        "vendor": ["com.acme", "com.snowplowanalytics.snowplow"],
        "name": ["page", "duplicate"],
        "format": ["jsonschema", "jsonschema"],
        "version": ["1-0-0", "1-0-0"],
        "value": [
            '{"schema":{"vendor":"com.acme","name":"page","format":"jsonschema","version":"1-0-0"},"data":{"a":1},'
            f'"hierarchy":{{"rootId":"{A}","rootTstamp":"2026-11-01 05:00:00.000",' + hierarchy.format("page"),
            '{"schema":{"vendor":"com.snowplowanalytics.snowplow","name":"duplicate","format":"jsonschema",'
            f'"version":"1-0-0"}},"data":{{"originalEventId":"{B}"}},"hierarchy":{{"rootId":"new-id",'
            '"rootTstamp":"2026-11-01 05:00:01.000",' + hierarchy.format("duplicate"),
        ],
        **{name: [None, None] for name in ("status", "synthetic", "synthetic_across", "id_events", "id_first")},
    }
