"""Generic DataFrame dedup, the populator and streaming dedup, on the suite's Spark session."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from events_manifest import RunConflictError, SqliteManifest
from events_manifest._dedup.arrow import OUTCOME, REASON
from events_manifest._dedup.engine import REPEATED, SEEN, Deduplicator, Expiry, Outcome
from events_manifest.errors import InputNotWholeError
from spark_integration import deduplicate, populate, shred
from tests.dedup_helpers import STREAM_SCHEMA, dedup_stream, stream_ids, write_json
from tests.shred_helpers import line, write_input

ETL = datetime(2026, 11, 1, 6)
ROWS = [
    ("u1", 1, "2026-11-03 10:00:00", 5.0),
    ("u1", 1, "2026-11-03 10:00:00", 5.0),  # the same row again
    ("u1", 1, "2026-11-03 09:00:00", 6.0),  # same key, other payload (and earlier)
    ("u2", 1, "2026-11-01 09:00:00", 7.0),  # older than the batch's latest minus a day
    ("u3", None, "2026-11-03 10:00:00", 1.0),  # null key field
    ("u4", 2, "not a time", 1.0),
    ("u5", 3, "2026-11-03 11:00:00", 2.0),
]
SCHEMA = "user string, order long, ts string, total double"


def _sorted(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.every_line
def test_four_outcomes_in_batch(spark: Any) -> None:
    df = spark.createDataFrame(ROWS, SCHEMA)
    result = deduplicate(df, key=["user", "order"], expiry=Expiry("ts", "1d"))
    assert _sorted(result.unique) == sorted([ROWS[2], ROWS[0], ROWS[6]])
    assert _sorted(result.duplicates) == [ROWS[1]]
    assert _sorted(result.expired) == [ROWS[3]]
    assert sorted(r["reason"] for r in result.errors.collect()) == [
        "expiry field [ts]: [not a time] is not a timestamp (ISO 8601 text, epoch seconds or a datetime)",
        "key field [order] is null",
    ]
    assert result.counts() == {"unique": 3, "duplicate": 1, "expired": 1, "error": 2}
    assert result.unique.columns == df.columns and result.errors.columns == [*df.columns, "reason"]
    result.unpersist()


def test_bad_arguments_name_the_columns(spark: Any) -> None:
    df = spark.createDataFrame([("a", "b")], "id string, reason string")
    with pytest.raises(ValueError, match=r"\['nope'\] are not in the DataFrame"):
        deduplicate(df, key=["nope"])
    with pytest.raises(ValueError, match=r"\['reason'\] would clash"):
        deduplicate(df, key=["id"])
    with pytest.raises(ValueError, match="list of column names"):
        deduplicate(df, key="id")  # the wrong type, on purpose


def test_cross_batch_through_the_manifest_shared_with_plain_python(spark: Any, tmp_path: Path) -> None:
    manifest = f"sqlite:///{tmp_path}/m.db"
    first = spark.createDataFrame([(f"k{n}", n) for n in range(6)], "id string, v long")
    with deduplicate(first, key=["id"], fingerprint=["v"], manifest=manifest, etl_time=ETL) as result:
        assert result.counts()["unique"] == 6
    assert result.run is not None and result.run.finished, "the run is in the ledger, finished"
    with pytest.raises(RunConflictError, match="was delivered already"):
        deduplicate(first, key=["id"], fingerprint=["v"], manifest=manifest, etl_time=ETL)
    with deduplicate(first, key=["id"], fingerprint=["v"], manifest=manifest, etl_time=ETL, rerun=True) as rerun:
        assert rerun.counts()["unique"] == 6  # a rerun on purpose, same etl time: accepted again
    later = spark.createDataFrame([("k0", 0), ("k1", 99), ("k9", 9)], "id string, v long")
    with deduplicate(
        later, key=["id"], fingerprint=["v"], manifest=manifest, etl_time=ETL + timedelta(hours=1)
    ) as result:
        assert _sorted(result.unique) == [("k1", 99), ("k9", 9)]
        duplicates = result.classified.filter(f"{OUTCOME} = 'duplicate'")
        assert [(r["id"], r[REASON]) for r in duplicates.collect()] == [("k0", SEEN)]

    # plain Python on the same manifest agrees on ids and fingerprints
    with SqliteManifest(tmp_path / "m.db") as store:
        dedup = Deduplicator(store, key=["id"], fingerprint=["v"], etl_time=ETL + timedelta(hours=2))
        outcomes = [
            d.outcome for d in dedup.classify([{"id": "k2", "v": 2}, {"id": "k1", "v": 99}, {"id": "k7", "v": 7}])
        ]
    assert outcomes == [Outcome.DUPLICATE, Outcome.DUPLICATE, Outcome.UNIQUE]


def test_the_populator_skips_what_the_shred_job_makes_bad_rows(spark: Any, tmp_path: Path) -> None:
    good, bad_json = "c6ef3124-b53a-4b13-a233-0088f79dcbcb", "0f4d1a2b-b53a-4b13-a233-0088f79dcbcb"
    archive = [line(good, "FP1"), line(bad_json, "FP2", contexts='{"schema":"iglu:com.acme/x/jsonschema/1-0-0"}')]
    summary = populate(spark, str(write_input(tmp_path / "archive", archive)), f"sqlite:///{tmp_path}/m.db")
    assert (summary.input_lines, summary.invalid_lines, summary.stored) == (2, 1, 1)
    with SqliteManifest(tmp_path / "m.db") as store:
        assert store.lookup(good, "FP1") is not None
        assert store.lookup(bad_json, "FP2") is None, "a line with invalid JSON was a bad row, never stored"

    # an archive a copy still writes into: refused before any put (its file would never be read)
    late = "9a1b2c3d-b53a-4b13-a233-0088f79dcbcb"
    (tmp_path / "archive/part-9._COPYING_").write_text(line(late, "FP9") + "\n")
    with pytest.raises(InputNotWholeError, match=r"part-9\._COPYING_ is still being copied"):
        populate(spark, str(tmp_path / "archive"), f"sqlite:///{tmp_path}/late.db")
    with SqliteManifest(tmp_path / "late.db") as store:
        assert store.lookup(good, "FP1") is None and list(store.runs()) == [], "nothing put, no run begun"


def test_populated_manifest_warms_the_first_shred(spark: Any, tmp_path: Path) -> None:
    ids = [f"{n:08x}-4b13-4a23-8088-f79dcbcb{n:04x}" for n in range(1, 9)]
    archive = [line(i, f"FP{n}", etl=f"2026-10-{10 + n:02d} 06:00:00.000") for n, i in enumerate(ids)]
    archive += [archive[0], line(ids[1], "", etl="2026-10-20 06:00:00.000"), "garbage"]
    source = str(write_input(tmp_path / "archive", archive))
    manifest = f"sqlite:///{tmp_path}/m.db"
    summary = populate(spark, source, manifest, since=datetime(2026, 10, 12))
    assert (summary.input_lines, summary.invalid_lines, summary.before_since) == (11, 1, 3)
    assert (summary.without_fingerprint, summary.events, summary.stored, summary.conflicting) == (1, 6, 6, 0)
    again = populate(spark, source, manifest, since=datetime(2026, 10, 12))
    assert (again.events, again.stored, again.conflicting) == (6, 6, 0)  # idempotent
    with SqliteManifest(tmp_path / "m.db") as store:
        entry = store.lookup(ids[5], "FP5")
        assert entry is not None and entry.etl_time == datetime(2026, 10, 15, 6)
        assert store.lookup(ids[0], "FP0") is None  # before --since

    batch = [line(i, f"FP{n}", etl="2026-11-01 06:00:00.000") for n, i in enumerate(ids)]
    result = shred(
        spark, str(write_input(tmp_path / "in", batch)), str(tmp_path / "out"), str(tmp_path / "bad"), manifest=manifest
    )
    assert (result.cross_batch_duplicates, result.kept_events) == (6, 2)


def _spark_within_watermark(spark: Any, source: Path, tmp_path: Path) -> None:
    stream = spark.readStream.schema(STREAM_SCHEMA).json(str(source))
    deduped = stream.withWatermark("ts", "1 hour").dropDuplicatesWithinWatermark(["id"])
    query = (
        deduped.writeStream.format("json")
        .option("path", str(tmp_path / "spark"))
        .option("checkpointLocation", str(tmp_path / "spark-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def test_streaming_agrees_within_the_watermark_and_remembers_beyond_it(spark: Any, tmp_path: Path) -> None:
    source, manifest = tmp_path / "source", f"sqlite:///{tmp_path}/m.db"
    t0 = datetime(2026, 11, 1, 10)

    def rows(*pairs: tuple[str, datetime]) -> list[dict[str, Any]]:
        return [{"id": i, "ts": ts.isoformat(), "payload": "x"} for i, ts in pairs]

    write_json(source, "1", rows(("a", t0), ("b", t0), ("a", t0 + timedelta(minutes=5)), ("c", t0)))
    dedup_stream(spark, source, tmp_path, manifest)
    _spark_within_watermark(spark, source, tmp_path)
    assert stream_ids(spark, tmp_path / "ours") == stream_ids(spark, tmp_path / "spark") == ["a", "b", "c"]

    # a restart; later events move Spark's watermark far past a's, then a is sent again
    write_json(source, "2", rows(("d", t0 + timedelta(hours=10))))
    dedup_stream(spark, source, tmp_path, manifest)
    _spark_within_watermark(spark, source, tmp_path)
    write_json(source, "3", rows(("a", t0 + timedelta(hours=10, minutes=30)), ("e", t0 + timedelta(hours=10))))
    dedup_stream(spark, source, tmp_path, manifest)
    _spark_within_watermark(spark, source, tmp_path)
    assert stream_ids(spark, tmp_path / "ours") == ["a", "b", "c", "d", "e"]
    assert stream_ids(spark, tmp_path / "spark") == ["a", "a", "b", "c", "d", "e"]  # a's state had been evicted


@pytest.mark.every_line
def test_a_batch_that_failed_is_replayed_and_nothing_is_lost_or_doubled(spark: Any, tmp_path: Path) -> None:
    source, manifest = tmp_path / "source", f"sqlite:///{tmp_path}/m.db"
    ts = "2026-11-01T10:00:00"
    write_json(source, "1", [{"id": f"e{n}", "ts": ts, "payload": "p"} for n in range(20)])
    dedup_stream(spark, source, tmp_path, manifest)
    write_json(source, "2", [{"id": f"e{n}", "ts": ts, "payload": "p"} for n in range(10, 40)])
    with pytest.raises(Exception, match="crash after the sink wrote"):
        dedup_stream(spark, source, tmp_path, manifest, fail_batch=1)
    dedup_stream(spark, source, tmp_path, manifest)  # restarts from the checkpoint: batch 1 again, same etl time
    assert stream_ids(spark, tmp_path / "ours") == sorted(f"e{n}" for n in range(40))
    assert stream_ids(spark, tmp_path / "ours" / "batch=1") == sorted(f"e{n}" for n in range(20, 40))
    etl_files = sorted(
        p.name for p in (tmp_path / "ours-checkpoint" / "events_manifest_etl").iterdir() if not p.name.startswith(".")
    )
    assert etl_files == ["0", "1"]


@pytest.mark.every_line
def test_populator_command_line(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spark_integration.populator import main

    source = str(write_input(tmp_path / "archive", [line("0f6d0917-b024-4d15-88f7-736ea256f947", "FP")]))
    assert main(["--input-folder", source, "--manifest", f"sqlite:///{tmp_path}/m.db"]) == 0
    assert re.search(r"events put +1\n  stored \(new or same etl\) +1\n", capsys.readouterr().out)
    with pytest.MonkeyPatch.context() as patch:  # refused before Spark starts
        patch.setattr("spark_integration.populator.local_session", lambda *a, **k: pytest.fail("Spark started"))
        assert main(["--input-folder", source, "--manifest", "memory://"]) == 1
    assert "in-memory manifest would not be shared" in capsys.readouterr().err
    assert main(["--input-folder", str(tmp_path / "nowhere"), "--manifest", f"sqlite:///{tmp_path}/m.db"]) == 1
    assert "Path does not exist" in capsys.readouterr().err


RECORDS = [
    {"id": "a", "n": 1, "x": 1.5, "ok": True, "tags": ["x", None, "é"], "at": {"city": "Paris", "zip": None}},
    {"id": "a", "n": 1, "x": 1.5, "ok": True, "tags": ["x", None, "é"], "at": {"city": "Paris"}},  # same record
    {"id": "a", "n": 2, "x": -0.25, "ok": False, "tags": [], "at": {"city": "Lyon", "zip": "69001"}},
    {"id": "c6ef3124-b53a-4b13-a233-0088f79dcbcb", "n": 3, "note": "a field the others lack"},
    {"id": "b", "n": None, "x": 1e-7, "at": None},
]


@pytest.mark.parametrize("first", ["spark", "python"])
def test_a_spark_job_and_a_python_service_agree_on_one_manifest(spark: Any, tmp_path: Path, first: str) -> None:
    """The same records, as a DataFrame read from their JSON lines and as dicts: the same ids and
    default fingerprints, so whichever runs second finds every distinct record stored."""
    (tmp_path / "records.ndjson").write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    df = spark.read.json(str(tmp_path / "records.ndjson"))
    url = f"sqlite://{tmp_path}/shared.db"

    def by_spark(etl: datetime) -> dict[str, int]:
        with deduplicate(df, key=["id"], manifest=url, etl_time=etl) as result:
            return result.counts()

    def by_python(etl: datetime) -> dict[str, int]:
        with (
            SqliteManifest(tmp_path / "shared.db") as manifest,
            Deduplicator(manifest, key=["id"], etl_time=etl) as run,
        ):
            list(run.classify(RECORDS))
        return {outcome.value: count for outcome, count in run.counts.items()}

    runs = [by_spark, by_python] if first == "spark" else [by_python, by_spark]
    earlier = runs[0](ETL)
    later = runs[1](ETL + timedelta(days=1))
    assert (earlier["unique"], earlier["duplicate"]) == (4, 1), "the first two records are one record"
    assert (later["unique"], later["duplicate"]) == (0, 5), "every record of the second run was stored by the first"


@pytest.mark.every_line
@pytest.mark.parametrize("expiry", [None, Expiry("at", "3h")])
def test_the_spark_dedup_decides_each_record_as_the_python_one(spark: Any, tmp_path: Path, expiry: Any) -> None:
    """The same records, in the same order, to the Python deduplicator and to the Spark one, each on
    a manifest holding the same earlier run: the same outcome and reason for every record. (With
    expiry, the records come latest first, so the latest so far is the batch's latest throughout:
    the one thing that depends on order.)"""
    records: list[dict[str, Any]] = [
        {"id": f"k{n % 7}", "v": n % 3, "at": f"2026-11-01T{23 - n % 5:02d}:00:00", "pad": "x" * (n % 2)}
        for n in range(60)
    ]
    records += [{"id": None, "v": 1, "at": "2026-11-01T20:00:00", "pad": ""}]
    records += [{"id": "k1", "v": None, "at": "not a time", "pad": ""}]
    records.sort(key=lambda r: r["at"] if r["at"][0].isdigit() else "", reverse=True)
    earlier = [{"id": "k3", "v": 1, "at": "2026-11-01T10:00:00", "pad": ""}]
    decided = {}
    for engine in ("python", "spark"):
        store = tmp_path / f"{engine}.db"
        with (
            SqliteManifest(store) as manifest,
            Deduplicator(manifest, key=["id"], fingerprint=["v", "pad"], etl_time=ETL) as run,
        ):
            list(run.classify(earlier))
        later = ETL + timedelta(hours=1)
        if engine == "python":
            with (
                SqliteManifest(store) as manifest,
                Deduplicator(manifest, key=["id"], fingerprint=["v", "pad"], expiry=expiry, etl_time=later) as run,
            ):
                decided[engine] = [(d.outcome.value, d.reason) for d in run.classify(records)]
        else:
            df = spark.createDataFrame(records, "id string, v long, at string, pad string").coalesce(1)
            with deduplicate(
                df, key=["id"], fingerprint=["v", "pad"], manifest=f"sqlite://{store}", etl_time=later, expiry=expiry
            ) as result:
                rows = {
                    (r["id"], r["v"], r["at"], r["pad"]): (r[OUTCOME], r[REASON]) for r in result.classified.collect()
                }
            decided[engine] = [rows[(r["id"], r["v"], r["at"], r["pad"])] for r in records]
    assert decided["spark"] == decided["python"]
    reasons = {reason for _, reason in decided["python"]}
    assert {None, REPEATED, SEEN, "key field [id] is null"} <= reasons
    assert expiry is None or ("expired", None) in decided["python"]
