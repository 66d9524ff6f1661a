"""What the glue takes of the shred job's engine: the batch's steps, the dedup, the output's layout.
The glue (`spark_integration`) imports the area through this face alone
(`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._snowplow import batch, dedup, parsing, shred_output, shred_run
from events_manifest._snowplow.batch import Shred, any_valid
from events_manifest._snowplow.dedup import Dedup
from events_manifest._snowplow.fields import COLLECTOR_TSTAMP, ETL_TSTAMP, EVENT_ID
from events_manifest._snowplow.parsing import TSTAMP_PATTERN, UUID_PATTERN
from events_manifest._snowplow.shred_output import PARTITIONS
from events_manifest._snowplow.shred_run import ShredRequest, Staged
from events_manifest._snowplow.summary import ShredSummary

__all__ = [
    "COLLECTOR_TSTAMP",
    "Dedup",
    "ETL_TSTAMP",
    "EVENT_ID",
    "PARTITIONS",
    "Shred",
    "ShredRequest",
    "ShredSummary",
    "TSTAMP_PATTERN",
    "Staged",
    "UUID_PATTERN",
    "any_valid",
    "batch",
    "dedup",
    "parsing",
    "shred_output",
    "shred_run",
]
