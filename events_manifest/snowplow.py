"""The Snowplow engine: enriched events checked, deduplicated and written out as the shred job
does, in plain Python over Arrow batches. `EnrichedDeduplicator` is its entry point for a Python
consumer; the Spark jobs hand it their batches through `batch.Shred`."""

from events_manifest._snowplow.dedup import BAD, CROSS_BATCH, IN_BATCH, KEPT, MANIFEST_ERROR, STATUSES
from events_manifest._snowplow.deduplicator import EnrichedDeduplicator, LineDecision
from events_manifest._snowplow.generator import sample_batches

__all__ = [
    "BAD",
    "CROSS_BATCH",
    "IN_BATCH",
    "KEPT",
    "MANIFEST_ERROR",
    "STATUSES",
    "EnrichedDeduplicator",
    "LineDecision",
    "sample_batches",
]
