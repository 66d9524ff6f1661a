"""Typed errors raised by the manifest; every message says what to do next."""

from __future__ import annotations


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


class RunConflictError(ManifestConfigError):
    """A run would lose or share another run's events (an unfinished run of the same input, an etl
    time another run holds): the message says which etl time to use, or how to clean up first."""


class ItemClaimedError(RunConflictError):
    """The item is processed already, or another run is processing it (a processing table's
    refusal): the message says how to release it."""
