"""PySpark glue: the shred job and its DataFrame pieces, on any events manifest.

Names are loaded on first use, so the pure-Python parts (`sdj`, `generator`) import without Spark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_integration.dedup import dedup_cross_batch, dedup_natural, dedup_synthetic, uuid5
    from spark_integration.enriched import load_enriched, parse
    from spark_integration.manifest_handle import ManifestHandle
    from spark_integration.session import local_session
    from spark_integration.shredder import EtlMismatchError, OutputExistsError, deduplicate, shred, validate
    from spark_integration.summary import ShredSummary

_EXPORTS = {
    "shred": "shredder",
    "validate": "shredder",
    "deduplicate": "shredder",
    "OutputExistsError": "shredder",
    "EtlMismatchError": "shredder",
    "ShredSummary": "summary",
    "load_enriched": "enriched",
    "parse": "enriched",
    "dedup_natural": "dedup",
    "dedup_cross_batch": "dedup",
    "dedup_synthetic": "dedup",
    "uuid5": "dedup",
    "ManifestHandle": "manifest_handle",
    "local_session": "session",
}

__all__ = [
    "EtlMismatchError",
    "ManifestHandle",
    "OutputExistsError",
    "ShredSummary",
    "dedup_cross_batch",
    "dedup_natural",
    "dedup_synthetic",
    "deduplicate",
    "load_enriched",
    "local_session",
    "parse",
    "shred",
    "uuid5",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spark_integration' has no attribute {name!r}")
    return getattr(import_module(f"spark_integration.{_EXPORTS[name]}"), name)
