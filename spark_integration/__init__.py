"""PySpark glue on the events manifest's core: the shred job, generic DataFrame and streaming
dedup, the manifest populator. Every rule they apply is the core's (`events_manifest`); this
package reads, groups and writes with Spark and hands Arrow batches to the core's engine.
"""

from __future__ import annotations

from events_manifest.folders import FolderClaimedError, InputMissingError, OutputExistsError
from events_manifest.snowplow.summary import ShredSummary
from spark_integration.generic_dedup import DedupResult, deduplicate
from spark_integration.populator import PopulateSummary, populate
from spark_integration.session import local_session
from spark_integration.shredder import EtlMismatchError, shred
from spark_integration.streaming import deduplicate_stream

__all__ = [
    "DedupResult",
    "EtlMismatchError",
    "FolderClaimedError",
    "InputMissingError",
    "OutputExistsError",
    "PopulateSummary",
    "ShredSummary",
    "deduplicate",
    "deduplicate_stream",
    "local_session",
    "populate",
    "shred",
]
