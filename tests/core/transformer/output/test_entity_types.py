"""An entity type reads back from the text its rows carry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from events_manifest._transformer.output.entity_types import EntityType, type_text


@given(
    st.sampled_from(
        ["iglu:com.acme/checkout/jsonschema/1-0-0", "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"]
    ),
    st.sampled_from(["CONTEXT", "SELF_DESCRIBING_EVENT"]),
    st.sampled_from(["", "TSV", "JSON"]),
)
def test_an_entity_type_reads_back_from_the_text_its_rows_carry(uri: str, entity: str, fmt: str) -> None:
    value = EntityType(uri, entity, fmt)
    assert value.text == type_text(uri, entity, fmt) == " ".join(filter(None, [entity, uri, fmt]))
    assert EntityType.parse(value.text) == value
