"""The transformer's output mode, `formats` in its config (docs/transformer.md), as the
reference's `TransformerConfig.Formats` is: wide-row JSON, wide-row Parquet, or shred mode with the
routing of each entity to TSV or JSON. The config builds it once; the writer and the message match
on it."""

from __future__ import annotations

import re

import attrs

from events_manifest._iglu.keys import NAME, VENDOR

TSV, JSON = "TSV", "JSON"

_CRITERION = re.compile(
    rf"iglu:({VENDOR})/({NAME})/({NAME})/([1-9][0-9]*|\*)-([0-9]+|\*)-([0-9]+|\*)",
)


@attrs.frozen
class Criterion:
    """`iglu:VENDOR/NAME/FORMAT/M-R-A` where each of M, R, A is a number or `*`."""

    vendor: str
    name: str
    format: str
    version: tuple[int | None, int | None, int | None]

    @classmethod
    def parse(cls, text: object) -> Criterion:
        match = _CRITERION.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"{text} is invalid Iglu schema criterion")
        vendor, name, fmt, *parts = match.groups()
        m, r, a = (None if part == "*" else int(part) for part in parts)
        return cls(vendor, name, fmt, (m, r, a))

    def matches(self, uri: str) -> bool:
        """Whether a schema key (`iglu:...`) falls under the criterion."""
        parts = uri.removeprefix("iglu:").split("/")
        if parts[:3] != [self.vendor, self.name, self.format]:
            return False
        version = [int(part) for part in parts[3].split("-")]
        return all(want is None or want == got for want, got in zip(self.version, version, strict=True))

    def overlaps(self, other: Criterion) -> bool:
        return (self.vendor, self.name) == (other.vendor, other.name) and all(
            a is None or b is None or a == b for a, b in zip(self.version, other.version, strict=True)
        )

    def __str__(self) -> str:
        version = "-".join("*" if part is None else str(part) for part in self.version)
        return f"iglu:{self.vendor}/{self.name}/{self.format}/{version}"


@attrs.frozen
class Routing:
    """Whether an entity is written as TSV or JSON: `default` unless a criterion of the other kind
    matches (with a TSV default, `skip` criteria route to JSON too: they skip nothing)."""

    default: str = TSV
    json: tuple[Criterion, ...] = ()
    tsv: tuple[Criterion, ...] = ()
    skip: tuple[Criterion, ...] = ()
    _formats: dict[str, str] = attrs.field(factory=dict, init=False, eq=False, repr=False)
    """Each schema key's format, once found: a run routes the same few keys again and again."""

    def format_of(self, uri: str) -> str:
        found = self._formats.get(uri)
        if found is None:
            if self.default == TSV:
                found = JSON if any(c.matches(uri) for c in (*self.json, *self.skip)) else TSV
            else:
                found = TSV if any(c.matches(uri) for c in self.tsv) else JSON
            self._formats[uri] = found
        return found


@attrs.frozen
class WideRowJson:
    """Each good event as one wide-row JSON line."""


@attrs.frozen
class WideRowParquet:
    """Good events as wide-row Parquet rows, with columns from their entities' JSON Schemas."""


@attrs.frozen
class Shred:
    """Shred mode: the atomic TSV line and each entity as TSV or JSON, as `routing` says."""

    routing: Routing = attrs.field(factory=Routing)


Formats = WideRowJson | WideRowParquet | Shred
"""The output mode of a transformer config."""
