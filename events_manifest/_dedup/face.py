"""What the glue takes of generic dedup: the Arrow front end's steps and columns, the engine's values.
The glue (`spark_integration`) imports the area through this face alone
(`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._dedup.arrow import (
    CLASSIFIED,
    ERROR,
    EVENT_ID,
    FINGERPRINT,
    IDENTIFIED,
    OUTCOME,
    REASON,
    SECONDS,
    ClassifyRows,
    IdentifyRows,
)
from events_manifest._dedup.batch_clock import BatchClock
from events_manifest._dedup.engine import Expiry, Identify, Outcome, check_specs

__all__ = [
    "BatchClock",
    "CLASSIFIED",
    "ClassifyRows",
    "ERROR",
    "EVENT_ID",
    "Expiry",
    "FINGERPRINT",
    "IDENTIFIED",
    "Identify",
    "IdentifyRows",
    "OUTCOME",
    "Outcome",
    "REASON",
    "SECONDS",
    "check_specs",
]
