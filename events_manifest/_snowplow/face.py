"""What the glue takes of the shred job's engine: the batch's steps, the dedup, the output's layout.
The glue (`spark_integration`) imports the area through this face alone
(`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._snowplow import batch, dedup, legacy_bad_rows, parsing, shred_output
from events_manifest._snowplow.batch import Shred, any_valid
from events_manifest._snowplow.dedup import Dedup, check_options
from events_manifest._snowplow.fields import COLLECTOR_TSTAMP, ETL_TSTAMP, EVENT_ID
from events_manifest._snowplow.parsing import TSTAMP_PATTERN, UUID_PATTERN
from events_manifest._snowplow.report import render_report
from events_manifest._snowplow.shred_output import PARTITIONS
from events_manifest._snowplow.summary import ShredSummary

__all__ = [
    "COLLECTOR_TSTAMP",
    "Dedup",
    "ETL_TSTAMP",
    "EVENT_ID",
    "PARTITIONS",
    "Shred",
    "ShredSummary",
    "TSTAMP_PATTERN",
    "UUID_PATTERN",
    "any_valid",
    "batch",
    "check_options",
    "dedup",
    "legacy_bad_rows",
    "parsing",
    "render_report",
    "shred_output",
]
