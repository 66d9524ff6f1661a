"""JSON printed as circe prints it."""

from __future__ import annotations

from events_manifest._transformer.decode import circe


def test_circe_escapes_every_iso_control_character() -> None:
    assert (
        circe.string("a/\u00e9\b\f\n\r\t\u0001\u007f\u009f\u00a0")
        == '"a/\u00e9\\b\\f\\n\\r\\t\\u0001\\u007f\\u009f\u00a0"'
    )
    assert circe.dumps(circe.loads('{"a" : [1.0, {"b":null}], "a": 2}')) == '{"a":2}'
