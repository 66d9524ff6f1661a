"""Typed errors raised by the manifest; every message says what to do next."""

from __future__ import annotations


class ManifestError(Exception):
    """Base class of every error raised by events-manifest."""


class ManifestConfigError(ManifestError, ValueError):
    """A configuration, URL or argument is invalid: fix the named field and retry."""


class ManifestUnavailableError(ManifestError):
    """The manifest cannot be reached or used (missing table, network, permissions, corrupt file)."""


class ManifestThrottledError(ManifestUnavailableError):
    """The store kept throttling after every retry: raise its capacity or lower the concurrency."""
