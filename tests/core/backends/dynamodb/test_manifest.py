"""The DynamoDB manifest on real local servers: the reference's item layout, written and honoured;
a manifest opened from a config."""

from __future__ import annotations

import uuid
from datetime import timedelta

import boto3
import pytest

from events_manifest import DynamoDbManifest, ManifestUnavailableError, init_storage
from events_manifest.testing import LocalServer
from tests.backends import REFERENCE_ETL, REFERENCE_FP, REFERENCE_ID, client_for, unique_table


def test_stored_item_has_the_reference_layout(server: LocalServer, table: str) -> None:
    client = client_for(server.endpoint)
    manifest = DynamoDbManifest(client, table)
    assert manifest.put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL)
    item = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1").get_item(
        TableName=table, Key={"eventId": {"S": REFERENCE_ID}, "fingerprint": {"S": REFERENCE_FP}}
    )["Item"]
    assert item == {
        "eventId": {"S": REFERENCE_ID},
        "fingerprint": {"S": REFERENCE_FP},
        "etlTime": {"N": "1485388885"},
        "ttl": {"N": "1500940885"},
    }
    key_schema = client.describe_table(TableName=table)["Table"]["KeySchema"]
    assert sorted((k["AttributeName"], k["KeyType"]) for k in key_schema) == [
        ("eventId", "HASH"),
        ("fingerprint", "RANGE"),
    ]


def test_an_item_written_by_the_reference_system_is_honoured(server: LocalServer, table: str) -> None:
    raw = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1")
    raw.put_item(
        TableName=table,
        Item={
            "eventId": {"S": REFERENCE_ID},
            "fingerprint": {"S": REFERENCE_FP},
            "etlTime": {"N": "1485388885"},
            "ttl": {"N": "1500940885"},
        },
    )
    manifest = DynamoDbManifest(client_for(server.endpoint), table)
    assert manifest.put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL + timedelta(minutes=1)) is False
    assert manifest.put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL) is True


def test_init_storage_from_config(server: LocalServer) -> None:
    name = unique_table()
    config = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/2-0-0",
        "data": {
            "name": "local",
            "auth": None,
            "awsRegion": "us-east-1",
            "dynamodbTable": name,
            "id": str(uuid.uuid4()),
            "purpose": "EVENTS_MANIFEST",
        },
    }
    with pytest.raises(ManifestUnavailableError, match=rf"\[{name}\] does not exist"):
        init_storage(config, endpoint_url=server.endpoint)
    with init_storage(config, endpoint_url=server.endpoint, create_if_missing=True) as manifest:
        assert isinstance(manifest, DynamoDbManifest) and manifest.table == name
        assert manifest.put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL)
    with init_storage(config, endpoint_url=server.endpoint) as manifest:
        assert manifest.put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL + timedelta(days=1)) is False
