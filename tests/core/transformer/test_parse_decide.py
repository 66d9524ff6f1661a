"""A batch parsed and decided: natural then synthetic dedup in the reference's order, the
duplicate context, a half surrogate pair."""

from __future__ import annotations

import json
from typing import Any

from events_manifest._transformer.output import bad_rows
from events_manifest._transformer.parse_decide import DUPLICATE_KEY, PARSED, Decide, Parse, with_new_id
from tests.shred_helpers import contexts, sdj
from tests.transformer_helpers import CLICK, event, fields_of

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def _decided(rows: list[str], **options: Any) -> dict[str, list[Any]]:
    import pyarrow as pa

    parsed = Parse().batch(pa.array(rows, pa.string())).to_pylist()
    parsed.sort(key=lambda row: row["key"])
    out = Decide(**options).rows(pa.RecordBatch.from_pylist(parsed, schema=PARSED)).to_pylist()
    return {kind: [row for row in out if row["output"] == kind] for kind in ("good", "bad", "duplicate", "meta")}


B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def test_natural_then_synthetic_dedup_in_the_references_order() -> None:
    rows = [
        event(A, "f1", etl="2026-11-01 06:00:02"),
        event(A, "f1", etl="2026-11-01 06:00:01", app_id="earliest"),
        event(A, "f1", etl="", app_id="no etl: earliest of all"),
        event(A, "f2"),
        event(B, "f1"),
        "not an event",
    ]
    decided = _decided(rows, threshold=1)
    good = [json.loads(row["value"]) for row in decided["good"]]
    assert decided["meta"][0]["natural"] == 2 and len(decided["bad"]) == 1
    assert sorted(row["app_id"] for row in good) == ["app", "app", "no etl: earliest of all"]
    renamed = [row for row in good if row["event_id"] != B]
    assert len(renamed) == 2 and A not in {row["event_id"] for row in renamed}
    for row in renamed:
        assert row["contexts_com_snowplowanalytics_snowplow_duplicate_1"] == [{"originalEventId": A}]
    assert f"CONTEXT {DUPLICATE_KEY.uri}" in decided["meta"][0]["types"]
    again = _decided(rows, threshold=1)
    assert [row["value"] for row in again["good"]] == [
        row["value"] for row in decided["good"]
    ]  # the same ids on a rerun
    assert (
        len(_decided(rows, threshold=2)["good"]) == 3
        and not _decided(rows, natural=False, threshold=None)["meta"][0]["natural"]
    )


def test_the_duplicate_context_comes_first_among_derived_contexts() -> None:
    renamed = with_new_id(fields_of(event(A, derived_contexts=contexts(sdj(CLICK, "{}")))), B)
    payload = json.loads(bad_rows.event_payload(renamed))
    assert payload["event_id"] == B
    assert [c["schema"] for c in payload["derived_contexts"]["data"]] == [DUPLICATE_KEY.uri, CLICK]


def test_half_a_surrogate_pair_is_written_as_java_writes_it() -> None:
    import pyarrow as pa

    parsed = Parse(limits={"app_id": 2}).batch(pa.array([event(A, app_id="a\U0001f600b")], pa.string()))
    assert json.loads(parsed.column("value")[0].as_py())["app_id"] == "a?"
