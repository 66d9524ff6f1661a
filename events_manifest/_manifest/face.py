"""What the glue takes of the manifest's area: the run ledger's records and advice. The glue
(`spark_integration`) imports the area through this face alone (`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest._manifest.ledger import LEASE_SECONDS, Advice, Run

__all__ = ["Advice", "LEASE_SECONDS", "Run"]
