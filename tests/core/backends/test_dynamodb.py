"""DynamoDB specifics on real local servers: stored layout, table administration, errors, throttling."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime, timedelta

import boto3
import pytest

from events_manifest import (
    ClientOptions,
    DynamoDbManifest,
    ManifestConfigError,
    ManifestThrottledError,
    ManifestUnavailableError,
    Provisioned,
    check_table,
    create_table,
    init_storage,
    manifest_from_url,
)
from events_manifest._backends.dynamodb import make_client
from events_manifest.testing import FaultProxy, LocalServer
from events_manifest.testing._servers import free_port
from tests.backends import unique_table

ETL = datetime(2017, 1, 26, 0, 1, 25, 292000)
ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
FP = "AADCE520E20C2899F4CED228A79A3083"


@pytest.fixture(params=["dynalite", "moto"])
def server(request: pytest.FixtureRequest) -> LocalServer:
    found: LocalServer = request.getfixturevalue("dynalite" if request.param == "dynalite" else "moto_server")
    return found


def client_for(endpoint: str, max_attempts: int = 3):  # type: ignore[no-untyped-def]
    return make_client(ClientOptions(region="us-east-1", endpoint_url=endpoint, max_attempts=max_attempts))


@pytest.fixture
def table(server: LocalServer) -> str:
    name = unique_table()
    create_table(client_for(server.endpoint), name)
    return name


def test_stored_item_has_the_reference_layout(server: LocalServer, table: str) -> None:
    client = client_for(server.endpoint)
    manifest = DynamoDbManifest(client, table)
    assert manifest.put(ID, FP, ETL)
    item = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1").get_item(
        TableName=table, Key={"eventId": {"S": ID}, "fingerprint": {"S": FP}}
    )["Item"]
    assert item == {
        "eventId": {"S": ID},
        "fingerprint": {"S": FP},
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
            "eventId": {"S": ID},
            "fingerprint": {"S": FP},
            "etlTime": {"N": "1485388885"},
            "ttl": {"N": "1500940885"},
        },
    )
    manifest = DynamoDbManifest(client_for(server.endpoint), table)
    assert manifest.put(ID, FP, ETL + timedelta(minutes=1)) is False
    assert manifest.put(ID, FP, ETL) is True


def test_missing_table_is_named(server: LocalServer) -> None:
    client = client_for(server.endpoint)
    with pytest.raises(ManifestUnavailableError, match=r"table \[no-such-table\] does not exist"):
        check_table(client, "no-such-table")
    with pytest.raises(ManifestUnavailableError, match=r"\[no-such-table\] does not exist"):
        DynamoDbManifest(client, "no-such-table").put(ID, FP, ETL)
    with pytest.raises(ManifestUnavailableError, match=r"\[no-such-table\]"):
        manifest_from_url(f"dynamodb://no-such-table?region=us-east-1&endpoint={server.endpoint}")


def test_create_table_is_idempotent_and_checks_keys(server: LocalServer) -> None:
    client = client_for(server.endpoint)
    name = unique_table()
    create_table(client, name, billing=Provisioned(20, 100))
    create_table(client, name)  # exists already: checked, not an error
    described = client.describe_table(TableName=name)["Table"]
    assert described["ProvisionedThroughput"]["WriteCapacityUnits"] == 100
    assert described["ProvisionedThroughput"]["ReadCapacityUnits"] == 20
    other = unique_table()
    client.create_table(
        TableName=other,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with pytest.raises(ManifestConfigError, match=rf"\[{other}\] has keys"):
        check_table(client, other)


def test_on_demand_table_with_ttl(
    moto_server: LocalServer, dynalite: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    moto_client = client_for(moto_server.endpoint)
    name = unique_table()
    create_table(moto_client, name)
    assert moto_client.describe_table(TableName=name)["Table"]["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = moto_client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "ttl")
    with caplog.at_level(logging.WARNING):
        create_table(client_for(dynalite.endpoint), unique_table())
    assert "has no TTL API" in caplog.text, "dynalite lacks UpdateTimeToLive: warned, not failed"


def test_unreachable_endpoint_is_named() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ManifestUnavailableError, match=re.escape(endpoint)):
        manifest_from_url(f"dynamodb://some-table?region=us-east-1&endpoint={endpoint}&max_attempts=1")


def test_throttling_is_retried_then_surfaced(server: LocalServer, table: str) -> None:
    items = [(str(uuid.uuid4()), FP, ETL) for _ in range(30)]
    with FaultProxy(server.endpoint, throttle_rate=0.15, seed=7) as proxy:  # few waits of backoff
        manifest = DynamoDbManifest(client_for(proxy.endpoint, max_attempts=10), table, concurrency=8)
        assert manifest.put_many(items) == [True] * 30
        assert proxy.throttled > 0, "the proxy really throttled some puts"
        assert manifest.put_many(items) == [True] * 30, "answers after retries are the rerun answers"
        proxy.throttle_rate = 1.0
        stubborn = DynamoDbManifest(client_for(proxy.endpoint, max_attempts=2), table)
        with pytest.raises(ManifestThrottledError, match=rf"\[{table}\] is still throttling"):
            stubborn.put(str(uuid.uuid4()), FP, ETL)


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
        assert manifest.put(ID, FP, ETL)
    with init_storage(config, endpoint_url=server.endpoint) as manifest:
        assert manifest.put(ID, FP, ETL + timedelta(days=1)) is False
