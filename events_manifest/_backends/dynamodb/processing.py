"""The processing table on DynamoDB: one item per processed input, beside the manifest's table."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from events_manifest._backends.dynamodb import operations
from events_manifest._backends.dynamodb.requests import Page, error_code, manifest_error
from events_manifest._backends.dynamodb.table import check_keys
from events_manifest._manifest.processing import ItemRecord, ProcessingManifest
from events_manifest.errors import ManifestConfigError, ManifestUnavailableError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import KeySchemaElementTypeDef

KEY = "itemId"
KEY_SCHEMA: list[KeySchemaElementTypeDef] = [{"AttributeName": KEY, "KeyType": "HASH"}]


class DynamoDbProcessingManifest(ProcessingManifest):
    """A processing table on DynamoDB (key `itemId`, a string), created on demand if missing.

    Needs `dynamodb:GetItem`, `PutItem`, `DeleteItem`, `DescribeTable` on it (and `Scan` to list,
    `CreateTable` to create it).
    """

    def __init__(self, client: DynamoDBClient, table: str, *, timeout: float = 60.0, create: bool = True) -> None:
        super().__init__(table)
        self.client = client
        self._send = operations.call_with(client)
        self._ready(timeout, create)

    def _ready(self, timeout: float, create: bool) -> None:
        deadline = time.monotonic() + timeout
        try:
            try:
                described = self.client.describe_table(TableName=self.table)["Table"]
            except ClientError as e:
                if error_code(e) != "ResourceNotFoundException":
                    raise
                if not create:
                    raise ManifestConfigError(f"there is no processing table {self.table}") from None
                self.client.create_table(
                    TableName=self.table,
                    KeySchema=KEY_SCHEMA,
                    AttributeDefinitions=[{"AttributeName": KEY, "AttributeType": "S"}],
                    BillingMode="PAY_PER_REQUEST",
                )
                described = self.client.describe_table(TableName=self.table)["Table"]
            while described.get("TableStatus") != "ACTIVE" and time.monotonic() < deadline:
                time.sleep(0.2)
                described = self.client.describe_table(TableName=self.table)["Table"]
        except (ClientError, BotoCoreError) as e:
            raise manifest_error(e, self.table) from e
        check_keys(
            self.table, described, [(KEY, "HASH")], "a processing table's", "choose another --processing-manifest-table"
        )
        if described.get("TableStatus") != "ACTIVE":
            raise ManifestUnavailableError(f"DynamoDB table [{self.table}] is not ACTIVE after {timeout:.0f} s")

    def _get(self, item: str) -> ItemRecord | None:
        request = {"TableName": self.table, "Key": _key(item), "ConsistentRead": True}
        found = operations.drive(operations.checked(self.table, "GetItem", request), self._send).get("Item")
        return _record(found) if found else None

    def _items(self) -> list[ItemRecord]:
        def page(start: Page | None) -> dict[str, Any]:
            return {"TableName": self.table, "ConsistentRead": True, **({"ExclusiveStartKey": start} if start else {})}

        def read(found: Page) -> tuple[list[ItemRecord], Page | None]:
            return [_record(i) for i in found.get("Items", [])], found.get("LastEvaluatedKey")

        return operations.drive(operations.pages(self.table, "Scan", page, read), self._send)

    def _swap(self, expected: ItemRecord | None, new: ItemRecord | None) -> bool:
        item = (new or expected).item  # type: ignore[union-attr]
        request: dict[str, Any] = {"TableName": self.table}
        if expected is None:
            request["ConditionExpression"] = f"attribute_not_exists({KEY})"
        else:
            request["ConditionExpression"] = "#state = :state AND runId = :run AND updatedAt = :at"
            request["ExpressionAttributeNames"] = {"#state": "state"}
            request["ExpressionAttributeValues"] = {
                ":state": {"S": expected.state},
                ":run": {"S": expected.run_id},
                ":at": {"N": str(expected.updated_seconds)},
            }
        if new is None:
            swap = operations.conditional(self.table, "DeleteItem", {**request, "Key": _key(item)})
        else:
            swap = operations.conditional(self.table, "PutItem", {**request, "Item": _item(new)})
        return operations.drive(swap, self._send)


def _key(item: str) -> dict[str, Any]:
    return {KEY: {"S": item}}


def _item(record: ItemRecord) -> dict[str, Any]:
    item = {
        **_key(record.item),
        "state": {"S": record.state},
        "runId": {"S": record.run_id},
        "application": {"S": record.application},
        "owner": {"S": record.owner},
        "updatedAt": {"N": str(record.updated_seconds)},
    }
    if record.detail:  # DynamoDB-compatible servers may refuse an empty string
        item["detail"] = {"S": record.detail}
    return item


def _record(item: dict[str, Any]) -> ItemRecord:
    return ItemRecord(
        item[KEY]["S"],
        item["state"]["S"],
        item["runId"]["S"],
        item["application"]["S"],
        item["owner"]["S"],
        int(item["updatedAt"]["N"]),
        item.get("detail", {}).get("S", ""),
    )
