"""The installed distribution's version, which outputs and messages name as their processor."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("events-manifest")
except metadata.PackageNotFoundError:  # a source tree run without being installed
    __version__ = "0+unknown"
