"""The shred job's dedup decisions on a batch of checked lines, step by step in the reference's
order: bad lines apart, one survivor per (id, fingerprint) (the earliest), a missing fingerprint
filled, the manifest's answer, a shared id re-identified, and across batches with a manifest."""

from __future__ import annotations

import uuid
from datetime import datetime

import pyarrow as pa
import pytest

from events_manifest import InMemoryManifest
from events_manifest._opening.handle import InProcess
from events_manifest._snowplow.batch import decide
from events_manifest._snowplow.dedup import (
    BAD,
    CROSS_BATCH,
    IN_BATCH,
    KEPT,
    Dedup,
    filled_fingerprint,
    new_event_id,
)
from events_manifest.errors import ManifestConfigError
from events_manifest.model import to_epoch_seconds
from tests.shred_helpers import line

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
ETL = to_epoch_seconds(datetime(2026, 11, 1, 6))


def decided(lines: list[str], dedup: Dedup) -> dict[str, list[object]]:
    columns = decide(pa.array(lines), dedup)
    return {name: columns[name].to_pylist() for name in ("status", "new_event_id", "synthetic", "synthetic_across")}


def test_the_earliest_of_a_pair_survives_and_a_bad_line_takes_no_part() -> None:
    lines = [
        line(A, "F", etl="2026-11-01 06:00:00.000"),
        line(A, "F", etl="2026-11-01 05:00:00.000"),  # earlier etl_tstamp: the survivor
        line("not-a-uuid", "F"),
        line(B, "G"),
    ]
    assert decided(lines, Dedup(None, ETL))["status"] == [IN_BATCH, KEPT, BAD, KEPT]


def test_a_shared_id_is_re_identified_the_same_on_every_rerun() -> None:
    lines = [line(A, "F1"), line(A, "F2"), line(B, "G")]
    first = decided(lines, Dedup(None, ETL))
    assert first["status"] == [KEPT, KEPT, KEPT] and first["synthetic"] == [True, True, False]
    assert first["new_event_id"] == [new_event_id(A, "F1", random_id=False), new_event_id(A, "F2", random_id=False), B]
    assert decided(lines, Dedup(None, ETL)) == first
    random = decided(lines, Dedup(None, ETL, random_ids=True))["new_event_id"]
    assert uuid.UUID(str(random[0])).version == 4
    assert decided(lines, Dedup(None, ETL, synthetic=False))["new_event_id"] == [A, A, B]


def test_missing_fingerprints_are_filled_by_rank_and_are_never_duplicates() -> None:
    assert filled_fingerprint(A, ETL, 1) != filled_fingerprint(A, ETL, 2) != filled_fingerprint(A, ETL + 1, 1)
    lines = [line(A, "", collector="2026-11-01 05:59:01.000"), line(A, "", collector="2026-11-01 05:59:00.000")]
    found = decided(lines, Dedup(None, ETL))
    assert found["status"] == [KEPT, KEPT], "two events without fingerprint: two, re-identified"
    assert found["new_event_id"] == [
        new_event_id(A, filled_fingerprint(A, ETL, 2), random_id=False),
        new_event_id(A, filled_fingerprint(A, ETL, 1), random_id=False),
    ]


def test_the_manifest_drops_what_an_earlier_batch_stored_and_finds_ids_it_stored_otherwise() -> None:
    manifest = InMemoryManifest()
    decided([line(A, "F"), line(B, "G")], Dedup(InProcess(manifest), ETL - 3600))
    later = Dedup(InProcess(manifest), ETL, cross_batch_synthetic=True)
    found = decided([line(A, "F"), line(B, "H")], later)
    assert found["status"] == [CROSS_BATCH, KEPT]
    assert found["synthetic_across"] == [False, True] and found["new_event_id"][1] == new_event_id(
        B, "H", random_id=False
    )
    rerun = decided([line(A, "F"), line(B, "G")], Dedup(InProcess(manifest), ETL - 3600, cross_batch_synthetic=True))
    assert rerun["status"] == [KEPT, KEPT] and rerun["synthetic_across"] == [False, False], "later entries ignored"


def test_cross_batch_synthetic_needs_a_manifest() -> None:
    with pytest.raises(ManifestConfigError, match="cross-batch synthetic dedup needs a manifest"):
        Dedup(None, ETL, cross_batch_synthetic=True)
