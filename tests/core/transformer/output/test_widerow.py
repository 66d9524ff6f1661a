"""A wide-row line: entity column names, the line itself, numbers and strings as the reference writes them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from events_manifest._iglu.keys import SchemaKey
from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_NAMES
from events_manifest._transformer.decode.jvm import hash_map_order
from events_manifest._transformer.output import widerow
from tests.shred_helpers import contexts, sdj, unstruct
from tests.transformer_helpers import CLICK, PRODUCT_1, PRODUCT_2, event, fields_of

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
ATOMIC = [FIELD_NAMES[i] for i in ATOMIC_FIELDS]


@pytest.mark.parametrize(
    ("uri", "entity", "column"),
    [
        ("iglu:org.w3/PerformanceTiming/jsonschema/1-0-0", "CONTEXT", "contexts_org_w3_performance_timing_1"),
        (
            "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0",
            "CONTEXT",
            "contexts_com_snowplowanalytics_snowplow_ua_parser_context_1",
        ),
        (
            "iglu:com.acme-corp/my-event/jsonschema/2-1-0",
            "SELF_DESCRIBING_EVENT",
            "unstruct_event_com_acme_corp_my_event_2",
        ),
        ("iglu:com.acme-corp/my-event/jsonschema/2-1-0", "CONTEXT", "contexts_com_acme_corp_my_event_2"),
        ("iglu:com.acme/HTTPRequest/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_httprequest_1"),
        ("iglu:com.acme/myEventV2/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_my_event_v2_1"),
        ("iglu:com.acme/event2Data/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_event2_data_1"),
        ("iglu:com.acme/snake_Case/jsonschema/1-0-0", "CONTEXT", "contexts_com_acme_snake_case_1"),
        ("iglu:com.Acme.x/aBCd/jsonschema/3-0-0", "CONTEXT", "contexts_com_acme_x_a_bcd_3"),
    ],
)
def test_entity_column_names(uri: str, entity: str, column: str) -> None:
    key = SchemaKey.parse(uri)
    assert key is not None and widerow.column_name(key, entity) == column


def test_a_wide_row_line() -> None:
    line = event(
        A,
        "fp",
        app_id='shop "x"\u007f',
        txn_id="7",
        geo_latitude="51.5072",
        geo_longitude="-0.1278",
        tr_total="1e7",
        br_cookies="1",
        dvce_created_tstamp="2026-11-01 05:58:00",
        contexts=contexts(
            sdj(PRODUCT_1, '{"sku": "a", "price": 1.50}'), sdj(PRODUCT_2, '{"sku":"b"}'), sdj(CLICK, "{}")
        ),
        derived_contexts=contexts(sdj(CLICK, '{"x":1e3}')),
        unstruct_event=unstruct(sdj("iglu:com.acme/add_to_cart/jsonschema/1-0-0", '{"n":-0}')),
    )
    text = widerow.line(fields_of(line))
    row = json.loads(text)
    expected: dict[str, Any] = dict.fromkeys(ATOMIC)
    expected.update(
        app_id='shop "x"\u007f',
        platform="web",
        event="page_view",
        event_id=A,
        event_fingerprint="fp",
        v_collector="ssc-3.2.0",
        v_etl="enrich-5.1.0",
        etl_tstamp="2026-11-01T06:00:00Z",
        collector_tstamp="2026-11-01T05:59:00Z",
        dvce_created_tstamp="2026-11-01T05:58:00Z",
        txn_id=7,
        geo_latitude=51.5072,
        geo_longitude=-0.1278,
        tr_total=1e7,
        br_cookies=True,
        geo_location="51.5072,-0.1278",
        contexts_com_acme_product_1=[{"sku": "a", "price": 1.5}, {"sku": "b"}],
        contexts_com_acme_click_1=[{"x": 1000}],  # the derived contexts' array replaces the contexts'
        unstruct_event_com_acme_add_to_cart_1={"n": 0},
    )
    assert row == expected
    assert list(row) == hash_map_order(row)
    assert '"price":1.50' in text and '"x":1e3' in text and '"n":-0' in text and '"tr_total":1.0E7' in text
    assert '"app_id":"shop \\"x\\"\\u007f"' in text
