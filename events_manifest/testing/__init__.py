"""Tools to test a pipeline or a new backend against real local servers and injected faults.

Nothing here is imported by the library itself; it needs only the standard library (and a
Node.js for dynalite, or moto for its server mode).
"""

from events_manifest.testing._proxy import FaultProxy
from events_manifest.testing._servers import LocalServer, find_dynalite, start_dynalite, start_moto

__all__ = ["FaultProxy", "LocalServer", "find_dynalite", "start_dynalite", "start_moto"]
