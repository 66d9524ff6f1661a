"""Tools to test a pipeline or a new backend against real local servers and injected faults.

Nothing here is imported by the library itself; it needs only the standard library (and a
Node.js for dynalite, moto for its server mode, the Google Cloud CLI's emulator for Pub/Sub).
"""

from events_manifest.testing._proxy import FaultProxy
from events_manifest.testing._servers import (
    LocalServer,
    find_dynalite,
    find_pubsub_emulator,
    start_dynalite,
    start_moto,
    start_pubsub_emulator,
)

__all__ = [
    "FaultProxy",
    "LocalServer",
    "find_dynalite",
    "find_pubsub_emulator",
    "start_dynalite",
    "start_moto",
    "start_pubsub_emulator",
]
