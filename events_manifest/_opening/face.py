"""What the glue takes of opening a manifest: the handle its workers open, the files a URL names. The
glue (`spark_integration`) imports the area through this face alone (`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._opening.handle import ManifestHandle
from events_manifest._opening.urls import manifest_files

__all__ = ["ManifestHandle", "manifest_files"]
