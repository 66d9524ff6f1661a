"""Records of every kind for generic dedup, and the outcome each gets (one key, a day's expiry)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events_manifest._dedup.engine import Outcome

ETL = datetime(2026, 11, 1, 6)
U, D, X, E = Outcome.UNIQUE, Outcome.DUPLICATE, Outcome.EXPIRED, Outcome.ERROR

RECORDS: list[Any] = [
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:00:00Z", "total": 5},
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:00:00Z", "total": 5},  # the same record again
    {"user": "u1", "order": 1, "ts": "2026-11-01T10:05:00Z", "total": 5},  # same key, other payload
    {"user": "u2", "order": 1, "ts": "2026-11-03T00:00:00Z", "total": 7},  # moves the latest on
    {"user": "u3", "order": 9, "ts": "2026-11-01T12:00:00Z", "total": 1},  # older than latest - 1d
    {"user": "u4", "ts": "2026-11-03T00:00:00Z"},  # no order
    {"user": "u5", "order": 2, "ts": "soon"},
    ["not", "a", "mapping"],
    {"user": "u6", "order": 2, "ts": 1793750400},  # 2026-11-03 epoch seconds
]
EXPECTED = [U, D, U, U, X, E, E, E, U]
