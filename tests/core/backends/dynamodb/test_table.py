"""Table administration: a missing table named, creation idempotent and its keys checked, an
on-demand table with its TTL."""

from __future__ import annotations

import logging
from datetime import datetime

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
from tests.backends import client_for, unique_table

ETL = datetime(2017, 1, 26, 0, 1, 25, 292000)
ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
FP = "AADCE520E20C2899F4CED228A79A3083"


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
