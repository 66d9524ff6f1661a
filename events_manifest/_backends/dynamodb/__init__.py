"""DynamoDB backend: the manifest, its table administration and client setup."""

from events_manifest._backends.dynamodb.client import ClientOptions, make_client
from events_manifest._backends.dynamodb.config_document import Credentials
from events_manifest._backends.dynamodb.manifest import DynamoDbManifest
from events_manifest._backends.dynamodb.table import Billing, OnDemand, Provisioned, check_table, create_table

__all__ = [
    "Billing",
    "ClientOptions",
    "Credentials",
    "DynamoDbManifest",
    "OnDemand",
    "Provisioned",
    "check_table",
    "create_table",
    "make_client",
]
