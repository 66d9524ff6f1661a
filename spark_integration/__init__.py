"""PySpark glue on the events manifest's core: the shred job, the transformers, generic DataFrame and
streaming dedup, the manifest populator. Every rule they apply is the core's (`events_manifest`); this
package reads, groups and writes with Spark and hands Arrow batches to the core's engine.

Names are imported on first use: `python -m spark_integration.shredder` then runs the module
once, not a copy the package imported first. The first use on a Spark outside the supported lines
(`_spark.api.check_line`) is refused, in a line that names them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from events_manifest._jobs.face import FolderClaimedError, InputMissingError, OutputExistsError
    from events_manifest._snowplow.face import ShredSummary
    from events_manifest._transformer.face import RunResult, StreamConfig
    from spark_integration._dedup.dataframe import DedupResult, deduplicate
    from spark_integration._dedup.stream import deduplicate_stream
    from spark_integration.populator import PopulateSummary, populate
    from spark_integration.session import local_session
    from spark_integration.shredder import shred
    from spark_integration.stream_transformer import StreamTransformer
    from spark_integration.transformer import transform

_EXPORTS = {
    "DedupResult": "spark_integration._dedup.dataframe",
    "FolderClaimedError": "events_manifest._jobs.face",
    "InputMissingError": "events_manifest._jobs.face",
    "OutputExistsError": "events_manifest._jobs.face",
    "PopulateSummary": "spark_integration.populator",
    "RunResult": "events_manifest._transformer.face",
    "ShredSummary": "events_manifest._snowplow.face",
    "StreamConfig": "events_manifest._transformer.face",
    "StreamTransformer": "spark_integration.stream_transformer",
    "deduplicate": "spark_integration._dedup.dataframe",
    "deduplicate_stream": "spark_integration._dedup.stream",
    "local_session": "spark_integration.session",
    "populate": "spark_integration.populator",
    "shred": "spark_integration.shredder",
    "transform": "spark_integration.transformer",
}
__all__ = [
    "DedupResult",
    "FolderClaimedError",
    "InputMissingError",
    "OutputExistsError",
    "PopulateSummary",
    "RunResult",
    "ShredSummary",
    "StreamConfig",
    "StreamTransformer",
    "deduplicate",
    "deduplicate_stream",
    "local_session",
    "populate",
    "shred",
    "transform",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spark_integration' has no attribute {name!r}")
    import_module("spark_integration._spark.api").check_line()
    return getattr(import_module(_EXPORTS[name]), name)
