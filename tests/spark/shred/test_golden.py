"""Golden end-to-end tests of the shred job on the local Spark session: exact expected outputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest import SqliteManifest
from events_manifest._opening.handle import ManifestHandle
from events_manifest._snowplow import dedup, shred_output
from events_manifest._snowplow.legacy_bad_rows import INVALID_UTF8
from events_manifest._snowplow.summary import ShredSummary
from events_manifest.snowplow import sample_batches
from spark_integration import shred
from tests.shred_helpers import (
    atomic,
    contexts,
    line,
    read_bad,
    read_output,
    sdj,
    shredded,
    unstruct,
    uuid5,
    write_input,
)

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
C = "1b1a4c8e-4f2a-4d7e-9a59-2a6f0e7c5a11"
D = "2c2b5d9f-5a3b-4e8f-8b6a-3b7a1f8d6b22"
E = "3d3c6eaf-6b4c-4f9a-9c7b-4c8b2a9e7c33"
G = "4e4d7fb0-7c5d-4a0b-8d8c-5d9c3b0f8d44"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
PRODUCT = "iglu:com.acme/product/jsonschema/1-0-2"
UA = "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0"
LINK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
SP = "com.snowplowanalytics.snowplow"


def run(
    spark: Any, tmp: Path, *files: list[str], **options: Any
) -> tuple[ShredSummary, dict[str, list[str]], list[Any]]:
    source = write_input(tmp / "in", *files)
    summary = shred(spark, str(source), str(tmp / "out"), str(tmp / "bad"), **options)
    return summary, read_output(tmp / "out"), read_bad(tmp / "bad")


def path(vendor: str, name: str, version: str) -> str:
    return f"shredded-types/vendor={vendor}/name={name}/format=jsonschema/version={version}"


@pytest.mark.every_line
def test_contexts_unstruct_derived_and_legacy_lines(spark: Any, tmp_path: Path) -> None:
    page = '{"id":"0f4d\\u00e9","n":1.50,"url":"http:\\/\\/x","tags":["été"],"e":1E3}'
    written = '{"id":"0f4dé","n":1.50,"url":"http://x","tags":["été"],"e":1E3}'  # compact, numbers as written
    product = '{"sku":"SKU-1","price":12.50}'
    ua = '{"useragentFamily":"Firefox"}'
    link = '{"targetUrl":"https://shop.example.com/sale"}'
    view = line(
        A,
        "FPA",
        collector="2026-11-01 05:00:00.123",
        contexts=contexts(sdj(WEB_PAGE, page), sdj(PRODUCT, product)),
        derived_contexts=contexts(sdj(UA, ua)),
        page_title="Caf\u00e9 d\u00e9j\u00e0 vu",
    )
    click = line(B, "FPB", event="unstruct", unstruct_event=unstruct(sdj(LINK, link)))
    legacy = line(C, collector="2026-11-01 05:30:00.000", fields=110, contexts=contexts(sdj(WEB_PAGE, '{"id":"z"}')))
    summary, out, bad = run(spark, tmp_path, [view, click, legacy])

    assert bad == []
    assert out["atomic-events"] == sorted([atomic(view), atomic(click), atomic(legacy)])
    assert all(len(x.split("\t")) == 128 for x in out["atomic-events"])
    assert out == {
        "atomic-events": out["atomic-events"],
        path(SP, "web_page", "1-0-0"): sorted(
            [
                shredded(SP, "web_page", "1-0-0", written, A, "2026-11-01 05:00:00.123"),
                shredded(SP, "web_page", "1-0-0", '{"id":"z"}', C, "2026-11-01 05:30:00.000"),
            ]
        ),
        path("com.acme", "product", "1-0-2"): [
            shredded("com.acme", "product", "1-0-2", product, A, "2026-11-01 05:00:00.123")
        ],
        path(SP, "ua_parser_context", "1-0-0"): [
            shredded(SP, "ua_parser_context", "1-0-0", ua, A, "2026-11-01 05:00:00.123")
        ],
        path(SP, "link_click", "1-0-1"): [shredded(SP, "link_click", "1-0-1", link, B, "2026-11-01 05:59:00.000")],
    }
    assert (summary.input_lines, summary.kept_events, summary.bad_rows) == (3, 3, 0)
    assert summary.entities == {
        f"{SP}/web_page/jsonschema/1-0-0": 2,
        "com.acme/product/jsonschema/1-0-2": 1,
        f"{SP}/ua_parser_context/jsonschema/1-0-0": 1,
        f"{SP}/link_click/jsonschema/1-0-1": 1,
    }
    assert summary.etl_time == "2026-11-01 06:00:00"
    assert ShredSummary.from_json((tmp_path / "out" / "_summary.json").read_text()) == summary


@pytest.mark.every_line
def test_natural_and_synthetic_duplicates_in_batch(spark: Any, tmp_path: Path) -> None:
    late = line(A, "FP1", etl="2026-11-01 06:00:05.000", page_title="late etl")
    early = line(A, "FP1", etl="2026-11-01 06:00:01.000", page_title="early etl")
    later_collector = line(B, "FP2", collector="2026-11-01 05:59:30.000", page_title="later collector")
    earlier_collector = line(B, "FP2", collector="2026-11-01 05:59:10.000", page_title="earlier collector")
    first_in_file = line(C, "FP3", page_title="first in the file")
    second_in_file = line(C, "FP3", page_title="second in the file")
    synthetic_1 = line(D, "FP4", page_title="one payload")
    synthetic_2 = line(D, "FP5", page_title="another payload")
    synthetic_2_again = line(D, "FP5", page_title="another payload")
    files = [
        [late, later_collector, first_in_file, synthetic_1, synthetic_2],
        [early, earlier_collector, second_in_file, synthetic_2_again],
    ]
    summary, out, bad = run(spark, tmp_path, *files)

    new_4, new_5 = uuid5(D, "FP4"), uuid5(D, "FP5")
    assert bad == []
    assert out["atomic-events"] == sorted(
        [
            atomic(early),
            atomic(earlier_collector),
            atomic(first_in_file),
            atomic(synthetic_1, new_4),
            atomic(synthetic_2, new_5),
        ]
    )
    duplicate = '{"originalEventId":"' + D + '"}'
    assert out[path(SP, "duplicate", "1-0-0")] == sorted(
        [
            shredded(SP, "duplicate", "1-0-0", duplicate, new_4, "2026-11-01 05:59:00.000"),
            shredded(SP, "duplicate", "1-0-0", duplicate, new_5, "2026-11-01 05:59:00.000"),
        ]
    )
    assert (summary.input_lines, summary.kept_events, summary.in_batch_duplicates) == (9, 5, 4)
    assert summary.synthetic_duplicates == 2
    assert summary.events_per_event_id == {"1": 0, "2": 3, "3-10": 1, "11-100": 0, ">100": 0}


def test_events_without_fingerprint_are_never_natural_duplicates(spark: Any, tmp_path: Path) -> None:
    same = line(A, "")
    summary, out, _ = run(spark, tmp_path, [same, same, line(B, "")])
    assert summary.in_batch_duplicates == 0
    assert summary.kept_events == 3
    assert summary.synthetic_duplicates == 2, "two copies without fingerprint share an id: synthetic"
    ids = sorted(x.split("\t")[6] for x in out["atomic-events"])
    assert len(set(ids)) == 3
    assert B in ids


def test_synthetic_dedup_can_be_disabled_or_random(spark: Any, tmp_path: Path) -> None:
    lines = [line(D, "FP4"), line(D, "FP5")]
    summary, out, _ = run(spark, tmp_path / "off", lines, synthetic_dedup=False)
    assert summary.synthetic_duplicates == 0
    assert [x.split("\t")[6] for x in out["atomic-events"]] == [D, D]
    summary, out, _ = run(spark, tmp_path / "random", lines, random_synthetic_ids=True)
    ids = {x.split("\t")[6] for x in out["atomic-events"]}
    assert summary.synthetic_duplicates == 2
    assert len(ids) == 2
    assert all(uuid5(D, fp) not in ids for fp in ("FP4", "FP5"))
    assert all(i[14] == "4" for i in ids), "v4 ids"


def test_cross_batch_against_a_prepopulated_manifest(spark: Any, tmp_path: Path) -> None:
    etl = datetime(2026, 11, 1, 6, 0, 0)
    store = tmp_path / "manifest.db"
    with SqliteManifest(store, ttl=timedelta(days=1)) as manifest:
        assert manifest.put(A, "FPA", etl - timedelta(hours=1))  # an earlier batch: duplicate
        assert manifest.put(B, "FPB", etl)  # an earlier failed run of this same batch: kept
        assert manifest.put(C, "FPC", etl - timedelta(days=2))  # expired by now: kept
        assert manifest.put(E, "other", etl - timedelta(hours=1))  # same id, other fingerprint: kept
    lines = [line(A, "FPA"), line(B, "FPB"), line(C, "FPC"), line(D, "FPD"), line(E, "FPE")]
    summary, out, bad = run(spark, tmp_path, lines, manifest=f"sqlite://{store}?ttl=1d")

    assert bad == []
    assert summary.cross_batch_duplicates == 1
    assert summary.kept_events == 4
    assert sorted(x.split("\t")[6] for x in out["atomic-events"]) == sorted([B, C, D, E])
    with SqliteManifest(store) as manifest:
        entry = manifest.lookup(D, "FPD")
        assert entry is not None and entry.etl_time == etl
        assert manifest.lookup(C, "FPC").etl_time == etl  # type: ignore[union-attr]


def test_only_valid_first_events_reach_the_manifest(spark: Any, tmp_path: Path) -> None:
    """Lines whose id is on no other line are put in the same trip to Python as their checks:
    a line with invalid JSON, fields or UTF-8 is never put (a repaired re-run of it must not be
    taken for a duplicate), a missing fingerprint is put filled, shared ids once per pair."""
    store = tmp_path / "manifest.db"
    lines = [
        line(A, "FPA"),
        line(B, "FPB", contexts='{"schema":"iglu:com.acme/x/jsonschema/1-0-0","data":[]}'),
        line(C, "FPC", collector="not a time"),
        line(D, "FPD"),
        line(D, "FPD"),
        line(E, ""),
        line(G, "FPG", page_title="caf\udce9"),  # a Latin-1 byte: not UTF-8
    ]
    summary, out, bad = run(spark, tmp_path, lines, manifest=f"sqlite://{store}")
    assert (summary.kept_events, summary.bad_rows, summary.in_batch_duplicates) == (3, 3, 1)
    assert (len(out["atomic-events"]), len(bad)) == (3, 3)
    assert [row["errors"][0]["message"] for row in bad if G in row["line"]] == [INVALID_UTF8]
    with SqliteManifest(store) as manifest:
        entries = manifest.entries_of([A, B, C, D, E, G])
    assert [e.fingerprint for e in entries[A]] == ["FPA"]
    assert entries[B] == [] and entries[C] == [] and entries[G] == [], "bad lines are not put"
    assert [e.fingerprint for e in entries[D]] == ["FPD"]
    assert summary.etl_time is not None
    etl = int(datetime.strptime(summary.etl_time, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())
    filled = uuid5(E, f"missing-fingerprint:{etl}:1")
    assert [e.fingerprint for e in entries[E]] == [filled], "filled as `dedup.filled_fingerprint` fills an id's first"


NAN_CONTEXTS = contexts(sdj(LINK, '{"a":NaN}'))
UNFINISHED = '{"schema":"' + "x" * 10 + '","data":['
LISTLESS = '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0","data":{}}'


def not_timestamps(**values: str) -> list[str]:
    """The messages, word for word, of timestamp fields that do not parse."""
    return [
        f"Field [{name}]: [{value}] is not in the expected Redshift/Postgres timestamp format"
        for name, value in values.items()
    ]


@pytest.mark.every_line
def test_every_kind_of_bad_line(spark: Any, tmp_path: Path) -> None:
    """Each message word for word, the whole value quoted (`null` when empty)."""
    wrong_contexts = '{"schema":"iglu:com.acme/contexts/jsonschema/1-0-0","data":[]}'
    lines = {
        "": ["Line does not match Snowplow enriched event (expected 108+ fields; found 1)"],
        "garbage": ["Line does not match Snowplow enriched event (expected 108+ fields; found 1)"],
        line(A, fields=100): ["Line does not match Snowplow enriched event (expected 108+ fields; found 100)"],
        line(A) + "\textra": ["Line does not match Snowplow enriched event (expected at most 131 fields; found 132)"],
        line("not-a-uuid"): ["Field [event_id]: [not-a-uuid] is not a valid UUID"],
        line(A.upper()): [f"Field [event_id]: [{A.upper()}] is not a valid UUID"],
        line(A, etl="yesterday", collector="2026-13-01 00:00:00.000"): not_timestamps(
            collector_tstamp="2026-13-01 00:00:00.000", etl_tstamp="yesterday"
        ),
        line(B, contexts=UNFINISHED): [
            f"Field [context]: invalid JSON [{UNFINISHED}] with parsing error: Expecting value at character 31"
        ],
        line(B, contexts=wrong_contexts, unstruct_event='{"schema":"' + "i" + '"}'): [
            'Field [ue_properties]: [{"schema":"i"}] is not self-describing JSON of the expected shape: the '
            "value must have exactly the properties schema and data (found schema)",
            f"Field [context]: [{wrong_contexts}] is not self-describing JSON of the expected shape: schema "
            "[iglu:com.acme/contexts/jsonschema/1-0-0] is not "
            "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-x",
        ],
        line(C, derived_contexts=contexts(sdj("not an iglu uri", "{}"))): [
            f"Field [derived_contexts]: [{contexts(sdj('not an iglu uri', '{}'))}] is not self-describing JSON of "
            "the expected shape: context 0: schema [not an iglu uri] is not an Iglu URI iglu:vendor/name/format/M-R-A"
        ],
        line(C, unstruct_event=unstruct(sdj(LINK, "[1]"))): [
            f"Field [ue_properties]: [{unstruct(sdj(LINK, '[1]'))}] is not self-describing JSON of the expected "
            f"shape: data: data of [{LINK}] must be a JSON object"
        ],
        line(D, contexts=LISTLESS): [
            f"Field [context]: [{LISTLESS}] is not self-describing JSON of the expected shape: data must be an "
            "array of self-describing JSONs"
        ],
        line("", etl=""): ["Field [event_id]: [null] is not a valid UUID", *not_timestamps(etl_tstamp="null")],
        line(D, etl="2026-11-01 06:00:00", collector="2026-02-30 00:00:00.000"): not_timestamps(
            collector_tstamp="2026-02-30 00:00:00.000", etl_tstamp="2026-11-01 06:00:00"
        ),
        line(D, contexts=NAN_CONTEXTS): [
            f"Field [context]: invalid JSON [{NAN_CONTEXTS}] with parsing error: NaN is not a JSON value"
        ],
    }
    summary, out, bad = run(spark, tmp_path, list(lines), manifest=f"sqlite://{tmp_path}/m.db")
    expected = [
        {"line": text, "errors": [{"level": "error", "message": m} for m in messages]}
        for text, messages in sorted(lines.items())
    ]
    assert bad == expected
    assert out["atomic-events"] == []
    assert (summary.input_lines, summary.bad_rows, summary.kept_events) == (len(lines), len(lines), 0)
    tstamp = json.loads(
        (tmp_path / "bad")
        .joinpath(next(p.name for p in (tmp_path / "bad").glob("part-*") if p.stat().st_size))
        .read_text()
        .splitlines()[0]
    )["failure_tstamp"]
    assert datetime.strptime(tstamp, "%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.every_line
def test_cross_batch_synthetic_duplicates(spark: Any, tmp_path: Path) -> None:
    """An id an earlier batch had with another fingerprint gets a new id and a duplicate context;
    entries of later batches do not count, so rerunning an older batch changes nothing."""
    manifest = f"sqlite://{tmp_path}/manifest.db"
    day1, day2 = "2026-11-01 06:00:00.000", "2026-11-02 06:00:00.000"
    batch1 = [line(A, "FP1", etl=day1), line(B, "FP1", etl=day1)]
    batch2 = [line(A, "FP2", etl=day2), line(B, "FP1", etl=day2), line(C, "FP1", etl=day2)]

    def shred_batch(lines: list[str], name: str, **options: Any) -> tuple[ShredSummary, dict[str, list[str]]]:
        source = write_input(tmp_path / f"in-{name}", lines)
        item = name.removesuffix("-rerun")  # a rerun is a run of the same item (the ledger's), on purpose
        rerun = name.endswith("-rerun")
        summary = shred(
            spark,
            str(source),
            str(tmp_path / name),
            str(tmp_path / f"{name}-bad"),
            item_id=item,
            rerun=rerun,
            **options,
        )
        return summary, read_output(tmp_path / name)

    first, out1 = shred_batch(batch1, "b1", manifest=manifest, cross_batch_synthetic=True)
    second, out2 = shred_batch(batch2, "b2", manifest=manifest, cross_batch_synthetic=True)
    assert (first.kept_events, first.synthetic_duplicates, first.cross_batch_synthetic_duplicates) == (2, 0, 0)
    assert (second.kept_events, second.cross_batch_duplicates) == (2, 1)
    assert (second.synthetic_duplicates, second.cross_batch_synthetic_duplicates) == (1, 1)
    new_id = uuid5(A, "FP2")
    assert out2["atomic-events"] == sorted([atomic(batch2[0], new_id), atomic(batch2[2])])
    assert out2[path("com.snowplowanalytics.snowplow", "duplicate", "1-0-0")] == [
        shredded(
            "com.snowplowanalytics.snowplow",
            "duplicate",
            "1-0-0",
            f'{{"originalEventId":"{A}"}}',
            new_id,
            "2026-11-01 05:59:00.000",
        )
    ]
    assert shred_batch(batch2, "b2-rerun", manifest=manifest, cross_batch_synthetic=True)[1] == out2
    assert shred_batch(batch1, "b1-rerun", manifest=manifest, cross_batch_synthetic=True)[1] == out1
    off, plain = shred_batch(batch2, "b2-plain", manifest=f"sqlite://{tmp_path}/other.db")
    assert off.cross_batch_synthetic_duplicates == 0 and A in {x.split("\t")[6] for x in plain["atomic-events"]}
    with pytest.raises(ValueError, match="needs a manifest"):
        shred_batch(batch1, "none", cross_batch_synthetic=True)


def test_the_shortcut_for_ids_on_one_line_decides_as_the_full_dedup(spark: Any, tmp_path: Path) -> None:
    """The job shuffles only the ids on more than one line and decides the others where they are
    read; with every line shuffled (no shared keys), every output line and count is the same,
    with or without a manifest, and the manifest holds the same."""
    from spark_integration._shred import plan
    from spark_integration._spark import enriched
    from spark_integration._spark.scan import scan_batch

    source = str(sample_batches()[0])
    lines = enriched.load_enriched(spark, source)
    scan = scan_batch(lines)
    try:
        assert 0 < scan.shared_count < scan.lines
        etl = scan.etl_time
        assert etl is not None

        def rows(manifest: ManifestHandle | None, shared_keys: Any) -> tuple[list[tuple[str, ...]], dict[str, int]]:
            groups = plan.output_lines(lines, etl, manifest, "T", shared_keys=shared_keys).collect()
            written = [(g.kind, g.type, text) for g in groups if g.value is not None for text in g.value.split("\n")]
            assert len(written) == sum(g.lines for g in groups)
            return sorted(written), {name: sum(g[name] or 0 for g in groups) for name in shred_output.COUNTS}

        fast = rows(None, scan.shared_keys)
        assert fast == rows(None, None)
        assert fast[1][dedup.IN_BATCH] > 0
        assert sum(kind == "shredded" for kind, *_ in fast[0]) > scan.lines

        # with a manifest: unshared lines put where they are read, or every line after the shuffle
        stores = [tmp_path / "early.db", tmp_path / "late.db"]
        early, late = (ManifestHandle.of(f"sqlite://{store}") for store in stores)
        assert rows(early, scan.shared_keys) == rows(late, None)
        valid = enriched.parse(lines).filter("valid")
        ids = [r.event_id for r in valid.select("event_id").distinct().collect()]
        contents = []
        for store in stores:
            with SqliteManifest(store) as manifest:
                contents.append(
                    {i: sorted(e.fingerprint for e in found) for i, found in manifest.entries_of(ids).items()}
                )
        assert contents[0] == contents[1] and sum(map(len, contents[0].values())) > 0
    finally:
        scan.release()


def test_many_shared_ids_are_joined_without_broadcast(spark: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Past `BROADCAST_KEYS` shared ids (and with Spark's own broadcast off) the lines are joined
    with them by a shuffle: same output."""
    from spark_integration._spark import scan

    batch = [line(A, "FP1"), line(A, "FP1"), line(A, "FP2"), line(B, "FP1"), line(C, "FP1"), line(C, "FP1")]
    broadcast = run(spark, tmp_path / "broadcast", batch)
    monkeypatch.setattr(scan, "BROADCAST_KEYS", 0)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        joined = run(spark, tmp_path / "joined", batch)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert broadcast[1:] == joined[1:]
    assert attrs.evolve(broadcast[0], seconds=0, output_path="", bad_path="", input_path="") == (
        attrs.evolve(joined[0], seconds=0, output_path="", bad_path="", input_path="")
    )
    assert joined[0].in_batch_duplicates == 2 and joined[0].synthetic_duplicates == 2


def test_a_file_added_to_the_input_during_a_run_is_left_for_the_next_one(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run reads the files it listed (and recorded in the ledger) before its claim, in every
    pass: a file that arrives once the run has started is not read, by any of its passes."""
    from spark_integration import shredder
    from spark_integration._spark.scan import scan_batch as scanned

    source = write_input(tmp_path / "in", [line(A, "FP1"), line(B, "FP1")])

    def arriving(*args: Any, **kwargs: Any) -> Any:
        (source / "late.tsv").write_text(line(C, "FP1") + "\n")
        return scanned(*args, **kwargs)

    monkeypatch.setattr(shredder, "scan_batch", arriving)
    summary = shred(spark, str(source), str(tmp_path / "out"), str(tmp_path / "bad"))
    atomic = read_output(tmp_path / "out")["atomic-events"]
    assert summary.input_lines == 2 and sorted(x.split("\t")[6] for x in atomic) == sorted([A, B])
    monkeypatch.undo()
    later = shred(spark, str(source), str(tmp_path / "out-2"), str(tmp_path / "bad-2"))
    assert later.input_lines == 3, "the next run reads it"
