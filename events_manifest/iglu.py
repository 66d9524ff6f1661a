"""Iglu: schema keys, and a resolver that finds the JSON Schema of a self-describing entity in the
repositories of a standard resolver configuration (docs/iglu.md)."""

from events_manifest._iglu.keys import SchemaKey
from events_manifest._iglu.resolver import (
    BUNDLED,
    IgluRepositoryError,
    Repository,
    Resolver,
    ResolverConfig,
    resolver_for,
)

__all__ = ["BUNDLED", "IgluRepositoryError", "Repository", "Resolver", "ResolverConfig", "SchemaKey", "resolver_for"]
