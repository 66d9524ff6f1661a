"""Java's renderings, as the reference's JVM prints and hashes: doubles, instants, a hash map's key order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_NAMES
from events_manifest._transformer.decode.event import parse_instant
from events_manifest._transformer.decode.jvm import double_to_string, hash_map_order, instant_to_string, string_hash

ATOMIC = [FIELD_NAMES[i] for i in ATOMIC_FIELDS]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (51.5072, "51.5072"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1e-4, "1.0E-4"),
        (-0.1278, "-0.1278"),
        (1.5e300, "1.5E300"),
        (float("nan"), None),
        (float("inf"), None),
    ],
)
def test_doubles_as_java_prints_them(value: float, text: str | None) -> None:
    assert double_to_string(value) == text


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"),
        ("2024-01-02T03:04:05.100Z", "2024-01-02T03:04:05.100Z"),
        ("2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05.123456Z"),
        ("2024-01-02T03:04:05.1234567Z", "2024-01-02T03:04:05.123456700Z"),
        ("-0044-03-15T12:00:00.000000001Z", "-0044-03-15T12:00:00.000000001Z"),
        ("+12345-01-01T00:00:00Z", "+12345-01-01T00:00:00Z"),
        ("2024-12-31T24:00:00Z", "2025-01-01T00:00:00Z"),
        ("2024-06-30t23:59:60z", "2024-06-30T23:59:59Z"),
    ],
)
def test_instants_parse_and_print_as_java_does(text: str, printed: str) -> None:
    nanos = parse_instant(text)
    assert nanos is not None and instant_to_string(nanos) == printed


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T00:00Z",
        "+2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00+01:00",
    ],
)
def test_instants_java_refuses(text: str) -> None:
    assert parse_instant(text) is None


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_instants_round_trip(nanos: int) -> None:
    assert parse_instant(instant_to_string(nanos)) == nanos


def test_java_string_hash_and_the_hash_maps_order() -> None:
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("app_id") == (-1411074055) & 0xFFFFFFFF  # what jshell prints for "app_id".hashCode()
    assert string_hash("contexts_com_acme_product_1") == (-12328427) & 0xFFFFFFFF

    def path(key: str) -> tuple[int, ...]:  # the spec's recipe, written out again
        h = string_hash(key)
        h = (h + ~(h << 9)) & 0xFFFFFFFF
        h ^= h >> 14
        h = (h + (h << 4)) & 0xFFFFFFFF
        h ^= h >> 10
        return tuple((h >> s) & 31 for s in range(0, 32, 5))

    keys = [*ATOMIC, "geo_location", "contexts_com_acme_product_1"]
    assert hash_map_order(keys) == sorted(keys, key=path)
