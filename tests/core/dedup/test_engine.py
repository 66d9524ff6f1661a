"""Generic dedup (`events_manifest._dedup.engine`) on every backend: outcomes, ids, runs, the async twin."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events_manifest import InMemoryManifest, ManifestRequestError, RunConflictError
from events_manifest._dedup.engine import KEY_NAMESPACE, AsyncDeduplicator, Deduplicator, Expiry, Outcome, event_id_of
from events_manifest.aio import to_async
from events_manifest.model import PutBatch
from tests.backends import Backend
from tests.dedup_helpers import ETL, EXPECTED, RECORDS, D, E, U, X
from tests.examples import examples


def test_every_record_lands_in_exactly_one_outcome(backend: Backend) -> None:
    with Deduplicator(backend.make(), key=["user", "order"], expiry=Expiry("ts", "1d"), etl_time=ETL) as dedup:
        decisions = list(dedup.classify(RECORDS))
    assert [d.outcome for d in decisions] == EXPECTED
    assert [d.record for d in decisions] == RECORDS
    assert [d.reason for d in decisions if d.outcome is E] == [
        "key field [order] is missing",
        "expiry field [ts]: [soon] is not a timestamp (ISO 8601 text, epoch seconds or a datetime)",
        "record is not a mapping (got list)",
    ]
    assert dedup.counts == {U: 4, D: 1, X: 1, E: 3}


def test_later_runs_see_earlier_ones_and_a_rerun_is_accepted(backend: Backend) -> None:
    manifest = backend.make()
    key: dict[str, Any] = {"key": ["user", "order"], "fingerprint": ["total"]}
    with Deduplicator(manifest, **key, etl_time=ETL) as dedup:
        first = [d.outcome for d in dedup.classify(RECORDS[:4])]
        with pytest.raises(RunConflictError, match="is still running"):
            Deduplicator(manifest, **key, etl_time=ETL).start()  # not while the first one runs
    with pytest.raises(RunConflictError, match="was delivered already"):
        Deduplicator(manifest, **key, etl_time=ETL).start()  # not by mistake once it has finished
    with Deduplicator(manifest, **key, etl_time=ETL, rerun=True) as dedup:
        rerun = [d.outcome for d in dedup.classify(RECORDS[:4])]
    later = Deduplicator(manifest, **key, etl_time=ETL + timedelta(hours=1))
    assert first == rerun == [U, D, D, U]  # by fingerprint `total`, record 3 is a copy of record 1
    assert [d.outcome for d in later.classify(RECORDS[:4])] == [D, D, D, D]
    assert [d.reason for d in later.classify([RECORDS[3]])] == ["repeated within this run"]


def test_async_twin_gives_the_same_decisions(tmp_path: Path) -> None:
    async def records() -> AsyncIterator[Any]:
        for record in RECORDS:
            yield record

    async def run() -> list[Outcome]:
        async with AsyncDeduplicator(
            to_async(InMemoryManifest()), key=["user", "order"], expiry=Expiry("ts", timedelta(days=1)), etl_time=ETL
        ) as dedup:
            return [d.outcome async for d in dedup.classify(records())]

    assert asyncio.run(run()) == EXPECTED


def test_keys_functions_and_ids() -> None:
    uid = "0F6D0917-B024-4D15-88F7-736EA256F947"
    assert event_id_of(uid) == uid.lower()
    assert event_id_of("order-1") == event_id_of("order-1") != event_id_of("order-2")
    dedup = Deduplicator(
        InMemoryManifest(), key=lambda r: r["id"].lower(), fingerprint=lambda r: r["v"] // 10, etl_time=ETL
    )
    outcomes = [
        d.outcome for d in dedup.classify([{"id": "A", "v": 11}, {"id": "a", "v": 19}, {"id": "a", "v": 21}, {}])
    ]
    assert outcomes == [U, D, U, E]
    with pytest.raises(ValueError, match="list of field names"):
        Deduplicator(InMemoryManifest(), key="user")


class FailingManifest(InMemoryManifest):
    """Answers a request error for one id, as DynamoDB does for an item it refuses."""

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        answers = super()._put_batch(batch)
        bad = event_id_of("poison")
        return [
            ManifestRequestError("ValidationException: item refused") if i == bad else a
            for i, a in zip(batch.event_ids, answers, strict=True)
        ]


def test_a_refused_put_is_an_error_with_its_reason() -> None:
    dedup = Deduplicator(FailingManifest(), key=["id"], etl_time=ETL)
    decisions = list(dedup.classify([{"id": "ok"}, {"id": "poison"}, {"id": "ok"}]))
    assert [d.outcome for d in decisions] == [U, E, D]
    assert decisions[1].reason == "manifest: ValidationException: item refused"


@given(st.text())
def test_event_ids_are_uuid5_of_the_key_text(text: str) -> None:
    expected = text.lower() if re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", text) else None
    assert event_id_of(text) == (expected or str(uuid.uuid5(KEY_NAMESPACE, text)))


records_strategy = st.lists(
    st.fixed_dictionaries({"k": st.sampled_from("abcd"), "v": st.integers(0, 2), "t": st.integers(0, 5 * 86400)}),
    max_size=60,
)


@settings(max_examples=examples(60), deadline=None)
@given(batches=st.lists(records_strategy, min_size=1, max_size=3), on_disk=st.booleans(), chunk=st.integers(1, 7))
def test_matches_a_plain_model(batches: list[list[dict[str, Any]]], on_disk: bool, chunk: int) -> None:
    """Against a dict-and-max model of the rules, over several runs, in memory and on disk."""
    manifest = InMemoryManifest()
    stored: set[tuple[str, int]] = set()
    for n, records in enumerate(batches):
        etl = ETL + timedelta(hours=n)
        dedup = Deduplicator(
            manifest,
            key=["k"],
            fingerprint=["v"],
            expiry=Expiry("t", "1d"),
            etl_time=etl,
            on_disk=on_disk,
            chunk_size=chunk,
        )
        with dedup:
            got = [d.outcome for d in dedup.classify(records)]
        latest, run, expected = -1, set(), []
        for r in records:
            latest = max(latest, r["t"])
            pair = (r["k"], r["v"])
            if r["t"] < latest - 86400:
                expected.append(X)
            elif pair in run or pair in stored:
                expected.append(D)
                run.add(pair)
            else:
                expected.append(U)
                run.add(pair)
        stored |= run
        assert got == expected


def test_naive_and_aware_expiry_values_agree() -> None:
    dedup = Deduplicator(InMemoryManifest(), key=["k"], expiry=Expiry("t", "1h"), etl_time=ETL)
    records = [{"k": 1, "t": datetime(2026, 1, 1, 12, tzinfo=UTC)}, {"k": 2, "t": datetime(2026, 1, 1, 10, 30)}]
    assert [d.outcome for d in dedup.classify(records)] == [U, X]
