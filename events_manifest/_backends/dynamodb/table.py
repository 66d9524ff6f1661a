"""Creating and checking the manifest's DynamoDB table (docs/dynamodb.md, table layout)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from botocore.exceptions import BotoCoreError, ClientError

from events_manifest._backends.dynamodb.requests import error_code, manifest_error
from events_manifest.errors import ManifestConfigError, ManifestUnavailableError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger(__name__)

KEY_SCHEMA = [
    {"AttributeName": "eventId", "KeyType": "HASH"},
    {"AttributeName": "fingerprint", "KeyType": "RANGE"},
]
ATTRIBUTES = [
    {"AttributeName": "eventId", "AttributeType": "S"},
    {"AttributeName": "fingerprint", "AttributeType": "S"},
]
KEYS = [(key["AttributeName"], key["KeyType"]) for key in KEY_SCHEMA]
TTL_ATTRIBUTE = "ttl"


@attrs.frozen
class OnDemand:
    """Pay per request: no capacity to plan and no throttling below the account's limits."""


@attrs.frozen
class Provisioned:
    """Fixed capacity units; the reference used 20 reads and 100 writes (it throttles large jobs)."""

    read_units: int = 20
    write_units: int = 100


Billing = OnDemand | Provisioned


def create_table(
    client: DynamoDBClient,
    name: str,
    *,
    billing: Billing = OnDemand(),
    timeout: float = 120.0,
) -> None:
    """Create the table (if it does not exist yet), wait until ACTIVE and enable TTL on `ttl`.

    Creating a table that exists already is not an error: its layout is checked instead.
    """
    kwargs: dict[str, Any] = {"TableName": name, "KeySchema": KEY_SCHEMA, "AttributeDefinitions": ATTRIBUTES}
    if isinstance(billing, Provisioned):
        kwargs["BillingMode"] = "PROVISIONED"
        kwargs["ProvisionedThroughput"] = {
            "ReadCapacityUnits": billing.read_units,
            "WriteCapacityUnits": billing.write_units,
        }
    else:
        kwargs["BillingMode"] = "PAY_PER_REQUEST"
    try:
        client.create_table(**kwargs)
        log.info("created DynamoDB table %s", name)
    except ClientError as e:
        if error_code(e) != "ResourceInUseException":
            raise manifest_error(e, name) from e
    except BotoCoreError as e:
        raise manifest_error(e, name) from e
    check_table(client, name, timeout=timeout)
    enable_ttl(client, name)


def enable_ttl(client: DynamoDBClient, name: str) -> None:
    """Let DynamoDB delete expired entries; a server without the TTL API gets a warning, not an error."""
    try:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )
    except ClientError as e:
        code, message = error_code(e), e.response.get("Error", {}).get("Message", "")
        if code == "ValidationException" and "already enabled" in message.lower():
            return
        if code in {"UnknownOperationException", "InvalidAction", "NotImplementedError"} or "not" in code.lower():
            log.warning(
                "DynamoDB table %s: this server has no TTL API (%s); expired entries are still ignored "
                "by the manifest but are not deleted",
                name,
                code,
            )
            return
        raise manifest_error(e, name) from e


def check_keys(
    name: str, described: Mapping[str, Any], expected: Sequence[tuple[str, str]], kind: str, advice: str
) -> None:
    """Refuse a table (`described` by DescribeTable) whose keys are not `expected`, all strings."""
    types = {a["AttributeName"]: a["AttributeType"] for a in described.get("AttributeDefinitions", [])}
    keys = sorted(
        (k["AttributeName"], k["KeyType"], types.get(k["AttributeName"])) for k in described.get("KeySchema", [])
    )
    wanted = sorted((key, role, "S") for key, role in expected)
    if keys != wanted:
        found, needed = (", ".join(f"{n} {role} {t}" for n, role, t in listed) for listed in (keys, wanted))
        raise ManifestConfigError(f"DynamoDB table [{name}] has keys ({found}), not {kind} ({needed}): {advice}")


def check_table(client: DynamoDBClient, name: str, *, timeout: float = 60.0) -> None:
    """Wait until the table is ACTIVE and has the manifest's key schema.

    Raises `ManifestUnavailableError` naming the table when it is missing or not ACTIVE in time,
    and `ManifestConfigError` when its keys are not the manifest's.
    """
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            table = client.describe_table(TableName=name)["Table"]
        except (ClientError, BotoCoreError) as e:
            raise manifest_error(e, name) from e
        check_keys(name, table, KEYS, "an events manifest's", "choose another table")
        status = table.get("TableStatus")
        if status == "ACTIVE":
            return
        if time.monotonic() >= deadline:
            raise ManifestUnavailableError(
                f"DynamoDB table [{name}] is still {status} after {timeout:.0f} s: retry later"
            )
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
