"""Enriched events deduplicated without Spark (`EnrichedDeduplicator`): the shred job's rules on
a Python consumer's batches, one decision per line."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from events_manifest import InMemoryManifest, ManifestRequestError, ManifestUnavailableError, SqliteManifest
from events_manifest._snowplow import batch
from events_manifest.model import PutBatch
from events_manifest.snowplow import BAD, CROSS_BATCH, IN_BATCH, KEPT, MANIFEST_ERROR, EnrichedDeduplicator
from events_manifest.testing.strategies import EPOCH, TXN_ID, Batches, enriched_batches
from tests.examples import examples
from tests.shred_helpers import KeptOnce, line, sdj, unstruct

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
ETL = datetime(2026, 11, 1, 7, 0)


def test_a_line_that_is_no_unicode_text_is_a_bad_row_and_one_text_is_refused() -> None:
    """A Python string may hold half a surrogate pair, which no file's line can: that line is a bad
    row (a consumer that retries its batch gets past it), the others decided as without it; one
    text given where lines are expected is refused, not decided a character at a time."""
    lines = [line(A, "F1"), line(B, "F1").replace("\t", "\t\ud800", 1), line(A, "F1")]
    decisions = EnrichedDeduplicator().decide(lines, ETL)
    assert [d.status for d in decisions] == [KEPT, BAD, IN_BATCH]
    assert [d.line for d in decisions] == lines
    position = lines[1].index("\ud800")
    assert decisions[1].errors == (
        f"line holds half a UTF-16 surrogate pair (U+D800) at character {position}: no Unicode text",
    )
    row = json.loads(decisions[1].bad_row(ETL))
    assert row["line"] == lines[1].replace("\ud800", "\ufffd"), "as invalid UTF-8 shows"
    with pytest.raises(TypeError, match=r"not one text: pass \[line\] or text\.splitlines\(\)"):
        EnrichedDeduplicator().decide(lines[0])


def test_one_batch_keeps_one_copy_reidentifies_a_shared_id_and_names_a_bad_line() -> None:
    lines = [
        line(A, "F1", txn_id="first"),
        line(A, "F1", etl="2026-11-01 06:00:01.000", txn_id="later copy"),
        line(A, "F2", txn_id="other fingerprint"),
        line(B, "F1", collector="yesterday"),
    ]
    decisions = EnrichedDeduplicator().decide(lines, ETL)

    assert [d.status for d in decisions] == [KEPT, IN_BATCH, KEPT, BAD]
    assert [d.line for d in decisions] == lines
    kept = [d for d in decisions if d.kept]
    assert {d.original_event_id for d in kept} == {A}
    assert all(d.reidentified and d.event_id == str(uuid.uuid5(uuid.UUID(A), d.line.split("\t")[129])) for d in kept)
    assert decisions[1].event_id == A and not decisions[1].reidentified
    assert decisions[3].errors == (
        "Field [collector_tstamp]: [yesterday] is not in the expected Redshift/Postgres timestamp format",
    )


def test_across_batches_a_kept_event_comes_back_as_a_cross_batch_duplicate(tmp_path: Path) -> None:
    with SqliteManifest(tmp_path / "manifest.db") as manifest:
        dedup = EnrichedDeduplicator(manifest)
        first = dedup.decide([line(A, "F1"), line(B, "F1")], ETL)
        again = dedup.decide([line(A, "F1"), line(B, "F2")], ETL + timedelta(hours=1))
        rerun = dedup.decide([line(A, "F1"), line(B, "F1")], ETL)  # the first batch again, same etl time

    assert [d.status for d in first] == [KEPT, KEPT]
    assert [d.status for d in again] == [CROSS_BATCH, KEPT]
    assert rerun == first


def test_without_a_manifest_each_batch_stands_alone() -> None:
    dedup = EnrichedDeduplicator()
    assert [d.status for d in dedup.decide([line(A, "F1")], ETL)] == [KEPT]
    assert [d.status for d in dedup.decide([line(A, "F1")], ETL + timedelta(hours=1))] == [KEPT]


class RefusingManifest(InMemoryManifest):
    """Refuses every put of event `A`, as DynamoDB refuses an item."""

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        answers = super()._put_batch(batch)
        refused = ManifestRequestError("table unreachable")
        return [refused if i == A else a for i, a in zip(batch.event_ids, answers, strict=True)]


def test_a_manifest_that_fails_a_put_makes_that_line_a_bad_row() -> None:
    manifest = RefusingManifest()
    decisions = EnrichedDeduplicator(manifest).decide([line(A, "F1"), line("x", "F1")], ETL)

    assert [d.status for d in decisions] == [MANIFEST_ERROR, BAD]
    assert decisions[0].errors == ("Cross-batch deduplication unexpected failure: table unreachable",)
    row = json.loads(decisions[0].bad_row(datetime(2026, 11, 1, 8, 0, 0, 123000, tzinfo=UTC)))
    assert row == {
        "line": decisions[0].line,
        "errors": [{"level": "error", "message": "Cross-batch deduplication unexpected failure: table unreachable"}],
        "failure_tstamp": "2026-11-01T08:00:00.123Z",
    }
    with pytest.raises(ValueError, match="kept"):
        EnrichedDeduplicator().decide([line(A, "F1")], ETL)[0].bad_row()


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=enriched_batches(batches=3))
def test_every_line_is_decided_once_and_every_event_kept_once(data: Batches) -> None:
    dedup = EnrichedDeduplicator(InMemoryManifest())
    kept_once = KeptOnce()
    for k, lines in enumerate(data.batches):
        etl = EPOCH + timedelta(days=k, hours=23)
        decisions = dedup.decide(lines, etl)
        assert [d.line for d in decisions] == lines
        assert sorted(d.line for d in decisions if d.bad) == sorted(data.bad[k])
        kept_once.batch(
            k, data.events[k], [(d.line.split("\t")[TXN_ID], d.event_id or "") for d in decisions if d.kept]
        )
        assert dedup.decide(lines, etl) == decisions, "a rerun with the batch's etl time decides the same"
    kept_once.check()


def test_a_line_that_fails_in_a_way_no_rule_foresaw_is_a_bad_row_and_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug met by one line (injected here: the JSON reader fails on one value) makes that line a
    bad row with the error, as the reference does; every other line of its batch is decided as
    without it. A manifest's failure is not such an error: it stops the batch."""
    marked = unstruct(sdj("iglu:com.acme/thing/jsonschema/1-0-0", '{"note":"BOOM"}'))
    lines = [line(str(uuid.uuid4()), f"F{n}", unstruct_event=marked if n == 4 else "") for n in range(7)]
    expected = EnrichedDeduplicator().decide(lines, ETL)
    real = batch.read_rows  # type: ignore[attr-defined]  # the name the batch calls, replaced below

    def failing(contexts: list[bytes | None], unstructs: list[bytes | None], derived: list[bytes | None]) -> Any:
        if any(value is not None and b"BOOM" in value for value in unstructs):
            raise KeyError("boom")
        return real(contexts, unstructs, derived)

    monkeypatch.setattr(batch, "read_rows", failing)
    decisions = EnrichedDeduplicator().decide(lines, ETL)
    assert [d.status for d in decisions] == [KEPT] * 4 + [BAD] + [KEPT] * 2
    assert decisions[4].errors == ("Unexpected error while processing the line: KeyError: 'boom'",)
    assert json.loads(decisions[4].bad_row(ETL))["line"] == lines[4]
    assert decisions[:4] + decisions[5:] == expected[:4] + expected[5:]

    def unavailable(*columns: list[bytes | None]) -> Any:
        raise ManifestUnavailableError("the store went away")

    monkeypatch.setattr(batch, "read_rows", unavailable)
    with pytest.raises(ManifestUnavailableError, match="the store went away"):
        EnrichedDeduplicator().decide(lines, ETL)
