"""Typed errors raised by the manifest; every message says what to do next."""

from __future__ import annotations

import json

__all__ = [
    "DeliveryError",
    "InputNotWholeError",
    "ItemClaimedError",
    "ManifestConfigError",
    "ManifestError",
    "ManifestRequestError",
    "ManifestThrottledError",
    "ManifestUnavailableError",
    "RunConflictError",
]


class ManifestError(Exception):
    """Base class of every error raised by events-manifest."""


class ManifestConfigError(ManifestError, ValueError):
    """A configuration, URL or argument is invalid: fix the named field and retry."""


class ManifestRequestError(ManifestError):
    """One put failed for a reason of its own (the store rejected it); other puts may succeed."""


class ManifestUnavailableError(ManifestError):
    """The manifest cannot be reached or used (missing table, network, permissions, corrupt file)."""


class ManifestThrottledError(ManifestUnavailableError):
    """The store kept throttling after every retry: raise its capacity or lower the concurrency."""


class InputNotWholeError(ManifestError):
    """Part of an input would not be read (a file a copy still writes, a sub-folder): nothing was
    read or written; the message says what to do."""


class DeliveryError(ManifestError):
    """A run's output could not be delivered (its queue or bad-row stream refused): the run is
    not committed, and the message says how it gets finished."""


class RunConflictError(ManifestConfigError):
    """A run would lose or share another run's events (an unfinished run of the same input, an etl
    time another run holds): the message says which etl time to use, or how to clean up first."""


class ItemClaimedError(RunConflictError):
    """The item is processed already, or another run is processing it (a processing table's
    refusal): the message says how to release it."""


def to_record(error: ManifestError) -> str:
    """An error as a value that travels in data (from a Spark worker to the driver): its type and
    message. `from_record` gives it back."""
    return json.dumps({"type": type(error).__name__, "message": str(error)})


def from_record(record: str) -> ManifestError:
    """The error `to_record` wrote, of its own type (a `ManifestUnavailableError` for a type not
    known here)."""
    found = json.loads(record)
    kind = globals().get(found.get("type"))
    if not (isinstance(kind, type) and issubclass(kind, ManifestError)):
        kind = ManifestUnavailableError
    error: ManifestError = kind(found.get("message", ""))
    return error
