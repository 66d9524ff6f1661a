"""Table administration: a missing table named, creation idempotent and its keys checked, an
on-demand table with its TTL."""

from __future__ import annotations

import logging

import pytest

from events_manifest import (
    DynamoDbManifest,
    ManifestConfigError,
    ManifestUnavailableError,
    Provisioned,
    check_table,
    create_table,
    manifest_from_url,
)
from events_manifest.testing import LocalServer
from tests.backends import REFERENCE_ETL, REFERENCE_FP, REFERENCE_ID, client_for, unique_table


def test_missing_table_is_named(server: LocalServer) -> None:
    client = client_for(server.endpoint)
    with pytest.raises(ManifestUnavailableError, match=r"table \[no-such-table\] does not exist"):
        check_table(client, "no-such-table")
    with pytest.raises(ManifestUnavailableError, match=r"\[no-such-table\] does not exist"):
        DynamoDbManifest(client, "no-such-table").put(REFERENCE_ID, REFERENCE_FP, REFERENCE_ETL)
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
