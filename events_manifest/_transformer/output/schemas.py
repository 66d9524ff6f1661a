"""What the transformer reads of a JSON Schema: its types, and whether it reads as one at all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KINDS = frozenset(("null", "boolean", "object", "array", "number", "integer", "string"))


def schema_types(schema: Mapping[str, Any]) -> set[str] | None:
    """The schema's `type` as a set; None when it has none (any type)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


def parseable(schema: object) -> bool:
    """Whether a fetched schema reads as a JSON Schema: an object whose keywords have their shapes."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type", [])
    if not (kind in KINDS if isinstance(kind, str) else isinstance(kind, list) and set(kind) <= KINDS):
        return False
    properties = schema.get("properties")
    if properties is not None and not (isinstance(properties, dict) and all(map(parseable, properties.values()))):
        return False
    required = schema.get("required")
    if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        return False
    items = schema.get("items")
    return items is None or parseable(items) or (isinstance(items, list) and all(map(parseable, items)))
