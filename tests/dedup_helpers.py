"""Records of every kind for generic dedup, and the outcome each gets (one key, a day's expiry)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from events_manifest._dedup.engine import Outcome

ETL = datetime(2026, 11, 1, 6)
U, D, X, E = Outcome.UNIQUE, Outcome.DUPLICATE, Outcome.EXPIRED, Outcome.ERROR

RECORDS: list[Any] = [
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:00:00Z", "total": 5},
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:00:00Z", "total": 5},  # the same record again
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:05:00Z", "total": 5},  # same key, other payload
    {"user": "u2", "order": 1, "ts": "2026-11-03T00:00:00Z", "total": 7},  # moves the latest on
    {"user": "u3", "order": 9, "ts": "2026-11-01T12:00:00Z", "total": 1},  # older than latest - 1d
    {"user": "u4", "ts": "2026-11-03T00:00:00Z"},  # no order
    {"user": "u5", "order": 2, "ts": "soon"},
    ["not", "a", "mapping"],
    {"user": "u6", "order": 2, "ts": 1793750400},  # 2026-11-03 epoch seconds
]
EXPECTED = [U, D, U, U, X, E, E, E, U]


def write_json(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f".{name}.tmp").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / f".{name}.tmp").rename(folder / f"{name}.json")  # appear whole to the file source


STREAM_SCHEMA = "id string, ts timestamp, payload string"


def dedup_stream(spark: Any, source: Path, tmp_path: Path, manifest: str, fail_batch: int | None = None) -> None:
    """Run our streaming dedup over what `source` holds now, writing each batch's unique rows to
    out/batch=<id> (overwritten on replay: an idempotent sink)."""
    from spark_integration._dedup.stream import deduplicate_stream

    def sink(df: Any, batch_id: int) -> None:
        df.write.mode("overwrite").json(str(tmp_path / "ours" / f"batch={batch_id}"))
        if batch_id == fail_batch and not (tmp_path / "crashed").exists():
            (tmp_path / "crashed").touch()
            raise RuntimeError("crash after the sink wrote, before the batch committed")

    stream = spark.readStream.schema(STREAM_SCHEMA).json(str(source))
    query = deduplicate_stream(
        stream,
        key=["id"],
        fingerprint=["id"],
        manifest=manifest,
        checkpoint_location=str(tmp_path / "ours-checkpoint"),
        sink=sink,
        trigger={"availableNow": True},
    )
    query.awaitTermination()


def stream_ids(spark: Any, folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(r["id"] for r in spark.read.schema(STREAM_SCHEMA).json(str(folder)).collect())
