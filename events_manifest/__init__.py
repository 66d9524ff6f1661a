"""events-manifest: remove duplicate events with a persistent manifest of (event id, fingerprint, etl time).

The one operation is a conditional put: `manifest.put(event_id, fingerprint, etl_time)` is True for
an event seen for the first time (or rerun with the same etl time) and False for a natural
duplicate of an earlier batch.
"""

from events_manifest._backends.dynamodb import (
    Billing,
    ClientOptions,
    Credentials,
    DynamoDbManifest,
    OnDemand,
    Provisioned,
    check_table,
    create_table,
)
from events_manifest._backends.dynamodb.config_document import DynamoDbConfig, parse_config
from events_manifest._backends.memory import InMemoryManifest
from events_manifest._backends.sqlite import SqliteManifest
from events_manifest._dedup.engine import AsyncDeduplicator, Decision, Deduplicator, Expiry, Outcome, Unreadable
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import Run
from events_manifest._manifest.processing import ItemRecord, ProcessingManifest
from events_manifest._opening.urls import init_storage, manifest_from_url, parse_duration
from events_manifest._version import __version__ as __version__
from events_manifest.errors import (
    ItemClaimedError,
    ManifestConfigError,
    ManifestError,
    ManifestRequestError,
    ManifestThrottledError,
    ManifestUnavailableError,
    RunConflictError,
)
from events_manifest.model import DEFAULT_TTL, ManifestEntry

__all__ = [
    "DEFAULT_TTL",
    "AsyncDeduplicator",
    "Billing",
    "ClientOptions",
    "Credentials",
    "Decision",
    "Deduplicator",
    "DuplicateStorage",
    "DynamoDbConfig",
    "DynamoDbManifest",
    "Expiry",
    "InMemoryManifest",
    "ItemClaimedError",
    "ItemRecord",
    "ManifestConfigError",
    "ManifestEntry",
    "ManifestError",
    "ManifestRequestError",
    "ManifestThrottledError",
    "ManifestUnavailableError",
    "OnDemand",
    "Outcome",
    "ProcessingManifest",
    "Provisioned",
    "Run",
    "RunConflictError",
    "SqliteManifest",
    "Unreadable",
    "check_table",
    "create_table",
    "init_storage",
    "manifest_from_url",
    "parse_config",
    "parse_duration",
]
