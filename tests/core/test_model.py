"""The manifest's values: event ids and fingerprints checked and normalised (a batch at C speed,
item by item to name a culprit), etl times as whole seconds, the contract's acceptance rule."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events_manifest.errors import ManifestConfigError
from events_manifest.model import (
    MAX_FINGERPRINT_BYTES,
    PutBatch,
    accepts,
    check_fingerprint,
    check_table_name,
    from_epoch_seconds,
    normalize_event_id,
    parse_timestamp,
    to_epoch_seconds,
    ttl_seconds,
)

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
WHEN = datetime(2026, 11, 1, 6)


def test_an_event_id_is_canonical_lowercase_text_or_named_in_the_refusal() -> None:
    assert normalize_event_id(A.upper()) == A == normalize_event_id(uuid.UUID(A))
    with pytest.raises(ManifestConfigError, match=r"event_id \['c6ef3124'\] is not a UUID"):
        normalize_event_id("c6ef3124")
    with pytest.raises(ManifestConfigError, match=r"event_id \[7\] is not a UUID"):
        normalize_event_id(7)  # type: ignore[arg-type]


def test_a_fingerprint_is_non_empty_and_fits_a_dynamodb_sort_key() -> None:
    assert check_fingerprint("fp") == "fp"
    assert check_fingerprint("é" * (MAX_FINGERPRINT_BYTES // 2)) == "é" * 512, "1,024 bytes: at the limit"
    with pytest.raises(ManifestConfigError, match="must be a non-empty string"):
        check_fingerprint("")
    with pytest.raises(ManifestConfigError, match="is longer than 1024 bytes: hash it first"):
        check_fingerprint("é" * 513)


def test_table_names_follow_dynamodb_s_rule() -> None:
    assert check_table_name("events_manifest.v1-a") == "events_manifest.v1-a"
    for bad in ("ab", "a" * 256, "has space", "ümlaut"):
        with pytest.raises(ManifestConfigError, match=r"is not a valid DynamoDB table name"):
            check_table_name(bad, "the table")


def test_etl_times_are_whole_utc_seconds() -> None:
    assert to_epoch_seconds(datetime(2026, 11, 1, 6, 0, 0, 999_999)) == to_epoch_seconds(WHEN)
    assert to_epoch_seconds(WHEN.replace(tzinfo=timezone(timedelta(hours=1)))) == to_epoch_seconds(WHEN) - 3600
    assert from_epoch_seconds(to_epoch_seconds(WHEN)) == WHEN
    assert parse_timestamp("2017-01-26 00:01:25.292") == datetime(2017, 1, 26, 0, 1, 25, 292_000)
    assert parse_timestamp("2017-01-26T00:01:25Z") == datetime(2017, 1, 26, 0, 1, 25, tzinfo=UTC)
    with pytest.raises(ManifestConfigError, match=r"timestamp \[yesterday\] is not of the form"):
        parse_timestamp("yesterday")
    with pytest.raises(ManifestConfigError, match="etl_time must be a datetime"):
        to_epoch_seconds("2026-11-01")  # type: ignore[arg-type]
    assert ttl_seconds(timedelta(days=180)) == 180 * 86400
    with pytest.raises(ManifestConfigError, match="ttl must be a timedelta of at least one second"):
        ttl_seconds(timedelta(milliseconds=10))


@given(st.lists(st.tuples(st.uuids(), st.sampled_from(["a", "b"]), st.integers(0, 2)), max_size=20), st.booleans())
def test_a_batch_is_the_same_whether_checked_at_c_speed_or_item_by_item(
    items: list[tuple[uuid.UUID, str, int]], upper: bool
) -> None:
    """Canonical text takes the columns' path, an upper-case id or a `uuid.UUID` the item-by-item
    one: the same keys and seconds, in input order."""
    texts = [(str(u).upper() if upper else str(u), fp, WHEN + timedelta(hours=h)) for u, fp, h in items]
    objects = [(u, fp, WHEN + timedelta(hours=h)) for u, fp, h in items]
    batch = PutBatch.of(texts)
    assert batch == PutBatch.of(objects)
    assert batch.event_ids == [str(u) for u, _, _ in items]
    assert batch.etl_seconds == [to_epoch_seconds(WHEN) + 3600 * h for _, _, h in items]
    assert sorted(p for group in batch.pair_groups() for p in group) == list(range(len(items)))


def test_a_bad_item_is_named() -> None:
    with pytest.raises(ManifestConfigError, match=r"each item must be an \(event_id, fingerprint, etl_time\) triple"):
        PutBatch.of([(A, "fp", WHEN), (A, "fp")])  # type: ignore[list-item]
    with pytest.raises(ManifestConfigError, match="fingerprint"):
        PutBatch.of([(A, "", WHEN)])


def test_the_contract_in_one_line() -> None:
    """Accepted when absent, when stored with the same etl time (a rerun), or expired by then."""
    assert accepts(None, 100)
    assert accepts((100, 200), 100)
    assert accepts((50, 100), 100) and not accepts((50, 101), 100)
