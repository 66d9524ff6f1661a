"""Atomic fields cut to their limits as the reference cuts them: UTF-16 units counted, half a
character written as `?`, the JSON columns never cut."""

from __future__ import annotations

import pyarrow as pa

from events_manifest._snowplow import fields, truncation
from events_manifest._snowplow.parsing import split_and_check
from tests.shred_helpers import java_substring, line

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def test_atomic_fields_are_cut_to_their_limits() -> None:
    agent = "é" * 600 + "a" * 600  # 1,200 characters, 1,800 bytes: cut to 1,000 characters
    title = "€" * 2000  # 2,000 characters of 3 bytes, within page_title's 2,000
    text = line(A, useragent=agent, page_title=title, app_id="a" * 256)
    found = split_and_check(pa.array([text, line(A, useragent="x" * 1000)]))
    after = found.atomic_after[0].as_py().split("\t")
    names = [fields.FIELD_NAMES[i] for i in fields.ATOMIC_AFTER]
    assert after[names.index("useragent")] == "é" * 600 + "a" * 400
    assert after[names.index("page_title")] == title
    assert found.atomic_before[0].as_py().split("\t")[0] == "a" * 255
    assert found.atomic_after[1].as_py().split("\t")[names.index("useragent")] == "x" * 1000, "at its limit: whole"
    assert found.json[0][0].as_py() == text.split("\t")[fields.CONTEXTS].encode(), "JSON columns are not cut"


def test_limits_count_utf16_units_as_java_does() -> None:
    """An emoji counts two; a cut inside one leaves `?` (the reference's writer's half character)."""
    emoji = "😀"
    agent = emoji * 600  # 1,200 units: 500 emoji kept
    title = "a" + emoji * 1500  # 3,001 units over page_title's 2,000: "a", 999 emoji and half of one
    text = line(A, useragent=agent, page_title=title, geo_country=emoji * 2, app_id="b" * 254 + emoji)
    found = split_and_check(pa.array([text, line(A, useragent=emoji * 500), line(A)]))
    names = [fields.FIELD_NAMES[i] for i in fields.ATOMIC_AFTER]
    after = found.atomic_after[0].as_py().split("\t")
    assert after[names.index("useragent")] == emoji * 500
    assert after[names.index("page_title")] == "a" + emoji * 999 + "?"
    assert after[names.index("geo_country")] == emoji
    assert found.atomic_before[0].as_py().split("\t")[0] == "b" * 254 + "?"
    assert found.atomic_after[1].as_py().split("\t")[names.index("useragent")] == emoji * 500, "at its limit"
    assert found.atomic_after[2].as_py() == "\t".join(line(A).split("\t")[i] for i in fields.ATOMIC_AFTER)
    assert found.json[0][0].as_py() == text.split("\t")[fields.CONTEXTS].encode(), "JSON columns are not cut"
    for name, value in [("useragent", agent), ("page_title", title), ("geo_country", emoji * 2)]:
        assert after[names.index(name)] == java_substring(value, truncation.MAX_LENGTHS[name])
