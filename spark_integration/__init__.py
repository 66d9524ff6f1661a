"""PySpark glue on any events manifest: the shred job and its DataFrame pieces, generic DataFrame
and streaming dedup, the manifest populator.

Names are loaded on first use, so the pure-Python parts (`sdj`, `generator`) import without Spark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_integration.dedup import Dedup
    from spark_integration.enriched import load_enriched, parse
    from spark_integration.folders import FolderClaimedError, InputMissingError, OutputExistsError
    from spark_integration.generic_dedup import DedupResult, deduplicate, uuid5
    from spark_integration.manifest_handle import ManifestHandle
    from spark_integration.populator import PopulateSummary, populate
    from spark_integration.session import local_session
    from spark_integration.shredder import (
        BatchScan,
        EtlMismatchError,
        LinePlan,
        output_lines,
        scan_batch,
        shred,
        validate,
    )
    from spark_integration.streaming import deduplicate_stream
    from spark_integration.summary import ShredSummary

_EXPORTS = {
    "shred": "shredder",
    "validate": "shredder",
    "scan_batch": "shredder",
    "BatchScan": "shredder",
    "output_lines": "shredder",
    "LinePlan": "shredder",
    "deduplicate": "generic_dedup",
    "DedupResult": "generic_dedup",
    "deduplicate_stream": "streaming",
    "populate": "populator",
    "PopulateSummary": "populator",
    "OutputExistsError": "folders",
    "FolderClaimedError": "folders",
    "InputMissingError": "folders",
    "EtlMismatchError": "shredder",
    "ShredSummary": "summary",
    "load_enriched": "enriched",
    "parse": "enriched",
    "Dedup": "dedup",
    "uuid5": "generic_dedup",
    "ManifestHandle": "manifest_handle",
    "local_session": "session",
}

__all__ = [
    "BatchScan",
    "Dedup",
    "DedupResult",
    "EtlMismatchError",
    "FolderClaimedError",
    "InputMissingError",
    "ManifestHandle",
    "OutputExistsError",
    "PopulateSummary",
    "ShredSummary",
    "deduplicate",
    "deduplicate_stream",
    "load_enriched",
    "local_session",
    "output_lines",
    "LinePlan",
    "parse",
    "populate",
    "scan_batch",
    "shred",
    "uuid5",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spark_integration' has no attribute {name!r}")
    return getattr(import_module(f"spark_integration.{_EXPORTS[name]}"), name)
