"""The transformer's plans give the same bytes: the scanned plan (ids found once decided where they
are read, shared ones shuffled), the parsed-first plan and every line shuffled, on runs that
hold every case that tells them apart: an id in two cases, synthetic and natural duplicates, bad
rows, a bad line at the earliest etl second, ids and timestamps in the reader's other shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest._opening.urls import manifest_from_url
from spark_integration._spark import enriched, scan
from spark_integration._spark.scan import RunScan
from spark_integration._transformer import rows
from tests.shred_helpers import contexts, sdj
from tests.spark.transformer.test_command import read_tree, run, write_run
from tests.transformer_helpers import event

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
C = "0f4a8c9e-1b2d-4e3f-8a5b-6c7d8e9f0a1b"
E = "0000000e-0000-0000-0000-00000000000e"
LENIENT_E = "e-0-0-0-e"  # Java's UUID.fromString reads it as E
PAGE = contexts(sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", '{"id":"p1"}'))
OTHERS = [f"{n:08x}-1b2d-4e3f-8a5b-6c7d8e9f0a1b" for n in range(40)]


def _run_lines() -> list[list[str]]:
    first = [
        event(A, "fa", etl="2026-11-01 06:00:02", app_id="late copy", contexts=PAGE),
        event(B, "fb1"),
        event("d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a", "fb1", app_id="same fingerprint"),
        "a line without tabs",
        event(C, "fc", etl="2026-11-01 05:00:00", txn_id="not a number"),  # bad: its etl sets nothing
    ]
    second = [
        event(A.upper(), "fa", etl="2026-11-01 06:00:01", app_id="first, in upper case", contexts=PAGE),
        event(B, "fb2"),
        event(C, "fc", etl="2026-11-01 06:00:00.5"),
        *(event(other, "f", etl="2026-11-01 06:00:09") for other in OTHERS),
    ]
    return [first, second, [event(OTHERS[0], "g")]]


PLANS = ("scanned", "parsed first", "shuffled")
"""The scanned plan; the parsed-first plan (cached: the rows of ids found once decided where they
are); and without a cache every row shuffled."""


def _transformed(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, plan: str, files: list[list[str]], extra: str = ""
) -> Path:
    """`files` as one run through the command line with the plan `plan`; the run's folder."""
    work = tmp / plan.replace(" ", "-")
    write_run(work, "run=1", *files)
    with monkeypatch.context() as patched:
        if plan != "scanned":
            patched.setattr(rows, "scan_run", lambda lines: RunScan(None, None))
        if plan == "shuffled":
            extra = ", ".join(filter(None, [extra, '"featureFlags": {"sparkCacheEnabled": false}']))
        done = run(work, extra, "--manifest", "sqlite://m.db")
    assert done.returncode == 0, done.stderr
    return work / "out" / "run=1"


def _counts(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "shredding_complete.json").read_text())["data"]
    return {key: data[key] for key in ("count", "typesInfo", "timestamps") if key in data} | {
        "timestamps": {k: v for k, v in data["timestamps"].items() if k.startswith("min") or k.startswith("max")}
    }


def _etl(folder: Path, event_id: str) -> str:
    manifest = manifest_from_url(f"sqlite:///{folder.parent.parent / 'm.db'}", read_only=True)
    (entry,) = manifest.entries_of([event_id])[event_id]
    return entry.etl_time.strftime("%Y-%m-%d %H:%M:%S")


@pytest.mark.every_line
@pytest.mark.parametrize(("mode", "plans"), [("widerow", PLANS), ("shred", PLANS[:2])])
def test_the_plans_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, plans: tuple[str, ...]
) -> None:
    extra = '"formats": {"transformationType": "shred"}' if mode == "shred" else ""
    folders = [_transformed(tmp_path, monkeypatch, plan, _run_lines(), extra) for plan in plans]
    scanned = folders[0]
    tree = read_tree(scanned)
    for other in folders[1:]:
        assert read_tree(other) == tree, other.parent.parent.name
        assert _counts(other) == _counts(scanned), other.parent.parent.name
    events = [place for place in tree if place == "output=good" or "name=atomic" in place]
    good = [line for place in events for line in tree[place]]
    assert sum(A in line for line in good) == 1 and not any(A.upper() in line for line in good), "one A, its case read"
    assert any("first, in upper case" in line for line in good), "the earliest copy kept"
    assert {_etl(folder, C) for folder in folders} == {"2026-11-01 06:00:00"}, "not the bad line's earlier second"


def test_the_earliest_second_checked_in_spark_when_its_first_lines_are_all_bad_and_a_year_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "CHECKED_FIRST", 2)
    bad = [event(other, "f", etl="2026-11-01 04:00:00", txn_id="x") for other in OTHERS[:3]]
    good_there = event(A, "fa", etl="2026-11-01 04:00:00.25")
    folder = _transformed(tmp_path, monkeypatch, "scanned", [bad, [good_there, event(B, "fb")]])
    assert _etl(folder, B) == "2026-11-01 04:00:00", "a good line at the second, past the first ones checked"
    year_0 = [event(A, "fa", etl="0000-01-01 00:00:00"), event(B, "fb")]
    before = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    folder = _transformed(tmp_path / "year 0", monkeypatch, "scanned", [year_0])
    assert _etl(folder, B) >= before, "a year no datetime holds: the run's etl time is now"


def test_ids_and_timestamps_in_the_reader_s_other_shapes_fall_back_to_the_shuffled_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id that is not its own text in any case (`e-0-0-0-e` is E), and an etl_tstamp whose text
    does not order it (`T`), are read all the same: the scan finds them and every line is shuffled."""
    lenient_id = [event(LENIENT_E, "fe", app_id="lenient"), event(E, "fe", etl="2026-11-01 05:59:00")]
    folder = _transformed(tmp_path / "id", monkeypatch, "scanned", [lenient_id, [event(A, "fa")]])
    good = read_tree(folder)["output=good"]
    assert [json.loads(line)["event_id"] for line in good].count(E) == 1, "one E: a natural duplicate"
    lenient_time = [event(A, "fa", etl="2026-11-01T05:30:00"), event(B, "fb", etl="2026-11-01 05:45:00")]
    folder = _transformed(tmp_path / "time", monkeypatch, "scanned", [lenient_time])
    assert _etl(folder, B) == "2026-11-01 05:30:00", "the T-separated etl_tstamp is the earliest"


def test_the_scan_finds_shared_ids_in_any_case_and_the_reader_s_other_shapes(spark: Any) -> None:
    def scanned(lines: list[str]) -> RunScan:
        return scan.scan_run(spark.createDataFrame([(line,) for line in lines], "line string"))

    earliest = event(C, etl="2026-11-01 05:00:00.1")
    found = scanned([event(A), event(A.upper()), event(B), earliest])
    assert found.keys is not None and found.keys.count() == 1 and found.earliest == "2026-11-01 05:00:00"
    assert found.line_of_earliest == earliest.encode(), "a line of that second, for its check"
    (key,) = found.keys.collect()
    either_case = spark.createDataFrame([(event(A),), (event(A.upper()),)], "line string")
    assert {row.key for row in either_case.select(enriched.event_key().alias("key")).collect()} == {key.key}
    assert scanned([event(LENIENT_E), event(B)]).keys is None
    assert scanned([event(A, etl="2026-11-01T06:00:00"), event(B)]).keys is None
    assert scanned([event(A, etl="2026-11-01 24:00:00"), event(B)]).keys is None, "24:00 is the next day"
    assert scanned([event("not an id"), event(B, etl="")]).keys is not None, "bad either way: no fallback"
