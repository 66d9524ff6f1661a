"""What the sync and async DynamoDB manifests share: requests, the condition, error meanings.

Only the I/O differs between the two clients; everything a put means lives here.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from events_manifest.errors import (
    ManifestConfigError,
    ManifestError,
    ManifestRequestError,
    ManifestThrottledError,
    ManifestUnavailableError,
)
from events_manifest.model import ManifestEntry

# SPEC §2's condition, extended with the ttl rule; `ttl` is a DynamoDB reserved word, hence #ttl.
CONDITION = "(attribute_not_exists(eventId) AND attribute_not_exists(fingerprint)) OR etlTime = :tst OR #ttl <= :tst"

THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def put_request(table: str, event_id: str, fingerprint: str, etl: int, ttl: int) -> dict[str, Any]:
    """The keyword arguments of one conditional PutItem."""
    tst = str(etl)
    return {
        "TableName": table,
        "Item": {
            "eventId": {"S": event_id},
            "fingerprint": {"S": fingerprint},
            "etlTime": {"N": tst},
            "ttl": {"N": str(etl + ttl)},
        },
        "ConditionExpression": CONDITION,
        "ExpressionAttributeNames": {"#ttl": "ttl"},
        "ExpressionAttributeValues": {":tst": {"N": tst}},
    }


def get_request(table: str, event_id: str, fingerprint: str) -> dict[str, Any]:
    return {
        "TableName": table,
        "Key": {"eventId": {"S": event_id}, "fingerprint": {"S": fingerprint}},
        "ConsistentRead": True,
    }


def query_request(table: str, event_id: str, start: dict[str, Any] | None = None) -> dict[str, Any]:
    """One page of the entries of an id: a Query on the partition key (needs `dynamodb:Query`)."""
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "eventId = :id",
        "ExpressionAttributeValues": {":id": {"S": event_id}},
        "ConsistentRead": True,
    }
    if start:
        request["ExclusiveStartKey"] = start
    return request


def entries_from_page(page: dict[str, Any]) -> tuple[list[ManifestEntry], dict[str, Any] | None]:
    """The entries of a Query page and the key to start the next page from (None: last page)."""
    entries = [entry_from_item(item) for item in page.get("Items", [])]
    return [e for e in entries if e is not None], page.get("LastEvaluatedKey")


def entry_from_item(item: dict[str, Any] | None) -> ManifestEntry | None:
    if not item:
        return None
    return ManifestEntry(
        item["eventId"]["S"], item["fingerprint"]["S"], int(item["etlTime"]["N"]), int(item["ttl"]["N"])
    )


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def put_outcome(error: Exception, table: str) -> bool | ManifestRequestError:
    """What a failed PutItem means: False for a failed condition (a duplicate), the error of this
    one request, or (raised) an error that stops every put."""
    if isinstance(error, ClientError) and error_code(error) == "ConditionalCheckFailedException":
        return False
    failure = manifest_error(error, table)
    if isinstance(failure, ManifestUnavailableError):
        raise failure from error
    return ManifestRequestError(str(failure))


def manifest_error(error: Exception, table: str) -> ManifestError:
    """Translate a botocore failure into a `ManifestError` that names the table and what to do."""
    if isinstance(error, ManifestError):
        return error
    if isinstance(error, ClientError):
        code = error_code(error)
        message = error.response.get("Error", {}).get("Message", "")
        if code in THROTTLING_CODES:
            return ManifestThrottledError(
                f"DynamoDB table [{table}] is still throttling after every retry ({code}): "
                "raise its capacity (or use on-demand billing) or lower the put concurrency"
            )
        if code == "ResourceNotFoundException":
            return ManifestUnavailableError(
                f"DynamoDB table [{table}] does not exist: create it with "
                "`events-manifest table create` or pass create_if_missing=True"
            )
        if code in {"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException"}:
            return ManifestUnavailableError(
                f"DynamoDB table [{table}]: access refused ({code}: {message}); check the credentials and "
                "that the policy allows dynamodb:PutItem and dynamodb:DescribeTable on the table"
            )
        if code in {"ServiceUnavailable", "ServiceUnavailableException"}:
            return ManifestUnavailableError(f"DynamoDB table [{table}] is unavailable ({code}): {message}")
        if code == "ValidationException":
            return ManifestConfigError(f"DynamoDB table [{table}] rejected the request: {message}")
        return ManifestUnavailableError(f"DynamoDB table [{table}]: {code}: {message}")
    if isinstance(error, NoCredentialsError):
        return ManifestUnavailableError(
            "no AWS credentials found: put them in the config's auth or configure the default AWS credential chain"
        )
    if isinstance(error, NoRegionError):
        return ManifestConfigError("no AWS region given: set awsRegion in the config or region= in the URL")
    if isinstance(error, BotoCoreError):
        return ManifestUnavailableError(f"DynamoDB table [{table}] is unreachable: {error}")
    return ManifestUnavailableError(f"DynamoDB table [{table}]: {type(error).__name__}: {error}")
