"""Iglu schema keys (`iglu:VENDOR/NAME/FORMAT/M-R-A`): the one parser of the whole code base.

Vendor, name, format and version are checked against the Iglu grammar before any URL or path is
built from them: vendor `[a-zA-Z0-9-_.]+`, name and format `[a-zA-Z0-9-_]+`, version
`MODEL-REVISION-ADDITION` with a model of 1 or more and no leading zeros. A vendor of only dots is
valid Iglu but would be a path segment (`.`, `..`): `path_safe` says whether a key can name a file.
"""

from __future__ import annotations

import functools
import re

import attrs

VENDOR = r"[a-zA-Z0-9_.-]+"
NAME = r"[a-zA-Z0-9_-]+"
VERSION = r"[1-9][0-9]*-(?:0|[1-9][0-9]*)-(?:0|[1-9][0-9]*)"
SCHEMA_URI = re.compile(rf"iglu:(?P<vendor>{VENDOR})/(?P<name>{NAME})/(?P<format>{NAME})/(?P<version>{VERSION})")
_PARTS = {"vendor": re.compile(VENDOR), "name": re.compile(NAME), "format": re.compile(NAME)}
_VERSION = re.compile(VERSION)
_PATH_SEGMENTS = {".", ".."}


def _check(instance: SchemaKey, attribute: attrs.Attribute[str], value: str) -> None:
    pattern = _VERSION if attribute.name == "version" else _PARTS[attribute.name]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValueError(f"[{value}] is not an Iglu schema {attribute.name}")


@attrs.frozen
class SchemaKey:
    """`iglu:VENDOR/NAME/FORMAT/M-R-A`, split; a part outside the grammar is a `ValueError`."""

    vendor: str = attrs.field(validator=_check)
    name: str = attrs.field(validator=_check)
    format: str = attrs.field(validator=_check)
    version: str = attrs.field(validator=_check)

    @staticmethod
    def parse(uri: object) -> SchemaKey | None:
        """The key of a schema URI, or None if `uri` is not one."""
        return _parsed(uri) if isinstance(uri, str) else None

    @property
    def model(self) -> int:
        return int(self.version.split("-")[0])

    @property
    def revision(self) -> int:
        return int(self.version.split("-")[1])

    @property
    def addition(self) -> int:
        return int(self.version.split("-")[2])

    @property
    def path_safe(self) -> bool:
        """Whether every part can be a path segment (a vendor `.` or `..` cannot)."""
        return self.vendor not in _PATH_SEGMENTS

    @property
    def path(self) -> str:
        """Where a static repository holds the schema, below its root."""
        return f"schemas/{self.vendor}/{self.name}/{self.format}/{self.version}"

    @property
    def uri(self) -> str:
        return f"iglu:{self.vendor}/{self.name}/{self.format}/{self.version}"

    def __str__(self) -> str:
        return self.uri


@functools.lru_cache(maxsize=4096)  # a batch holds few distinct schemas; bounded whatever the input holds
def _parsed(uri: str) -> SchemaKey | None:
    parts = parse_parts(uri)
    return SchemaKey(*parts) if parts is not None else None


@functools.lru_cache(maxsize=4096)
def parse_parts(uri: str) -> tuple[str, str, str, str] | None:
    """The vendor, name, format and version of a schema URI, or None if it is not one."""
    match = SCHEMA_URI.fullmatch(uri)
    if match is None:
        return None
    return match["vendor"], match["name"], match["format"], match["version"]
