"""What the sync and async DynamoDB manifests share: requests, the condition, error meanings.

Only the I/O differs between the two clients; everything a put means lives here.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    ProxyConnectionError,
    SSLError,
)

from events_manifest import _redact as redact
from events_manifest._aws import no_region
from events_manifest._manifest.ledger import Run
from events_manifest.errors import (
    ManifestConfigError,
    ManifestError,
    ManifestRequestError,
    ManifestThrottledError,
    ManifestUnavailableError,
)
from events_manifest.model import ManifestEntry

# The reference's condition (docs/dynamodb.md) with the ttl rule; `ttl` is a DynamoDB reserved word, hence #ttl.
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


METHODS = {
    "PutItem": "put_item",
    "DeleteItem": "delete_item",
    "GetItem": "get_item",
    "Query": "query",
    "Scan": "scan",
}
"""The client method of each operation the manifest sends."""

Page = dict[str, Any]


RUNS_ID = "events-manifest:runs"
"""The partition of the run ledger's items: not a UUID, so never an event's."""


def runs_request(table: str, start: dict[str, Any] | None = None) -> dict[str, Any]:
    """One page of the run ledger: a Query on its partition."""
    return query_request(table, RUNS_ID, start)


def runs_from_page(page: dict[str, Any]) -> tuple[list[Run], dict[str, Any] | None]:
    runs = [
        Run(
            int(item["etlTime"]["N"]),
            item["item"]["S"],
            item["state"]["S"],
            int(item["startedAt"]["N"]),
            int(item["finishedAt"]["N"]) if "finishedAt" in item else None,
            item["owner"]["S"] if "owner" in item else "",
            int(item["aliveAt"]["N"]) if "aliveAt" in item else None,
            item["source"]["S"] if "source" in item else "",
            item["output"]["S"] if "output" in item else "",
        )
        for item in page.get("Items", [])
    ]
    return runs, page.get("LastEvaluatedKey")


def _run_key(etl: int) -> dict[str, Any]:
    return {"eventId": {"S": RUNS_ID}, "fingerprint": {"S": f"run:{etl:012d}"}}


def swap_run_request(table: str, expected: Run | None, new: Run | None) -> tuple[str, dict[str, Any]]:
    """The conditional PutItem (or DeleteItem, when `new` is None) of `_swap_run`: it applies only
    if the ledger holds exactly `expected` at that etl time (its last sign of life included)."""
    etl = (new or expected).etl_seconds  # type: ignore[union-attr]
    request: dict[str, Any] = {"TableName": table}
    if expected is None:
        request["ConditionExpression"] = "attribute_not_exists(eventId)"
    else:
        alive = "attribute_not_exists(aliveAt)" if expected.alive_seconds is None else "aliveAt = :alive"
        request["ConditionExpression"] = f"#item = :item AND #state = :state AND startedAt = :started AND {alive}"
        request["ExpressionAttributeNames"] = {"#item": "item", "#state": "state"}
        request["ExpressionAttributeValues"] = {
            ":item": {"S": expected.item},
            ":state": {"S": expected.state},
            ":started": {"N": str(expected.started_seconds)},
        }
        if expected.alive_seconds is not None:
            request["ExpressionAttributeValues"][":alive"] = {"N": str(expected.alive_seconds)}
    if new is None:
        return "DeleteItem", {**request, "Key": _run_key(etl)}
    item = {
        **_run_key(etl),
        "etlTime": {"N": str(new.etl_seconds)},
        "item": {"S": new.item},
        "state": {"S": new.state},
        "startedAt": {"N": str(new.started_seconds)},
    }
    if new.owner:
        item["owner"] = {"S": new.owner}
    if new.finished_seconds is not None:
        item["finishedAt"] = {"N": str(new.finished_seconds)}
    if new.alive_seconds is not None:
        item["aliveAt"] = {"N": str(new.alive_seconds)}
    for name in ("source", "output"):  # DynamoDB-compatible servers may refuse an empty string
        if getattr(new, name):
            item[name] = {"S": getattr(new, name)}
    return "PutItem", {**request, "Item": item}


def entries_of_run_request(table: str, etl: int, start: dict[str, Any] | None = None) -> dict[str, Any]:
    """One page of a Scan for the entries stored with an etl time (needs `dynamodb:Scan`)."""
    request: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "etlTime = :tst AND eventId <> :runs",
        "ProjectionExpression": "eventId, fingerprint",
        "ExpressionAttributeValues": {":tst": {"N": str(etl)}, ":runs": {"S": RUNS_ID}},
        "ConsistentRead": True,
    }
    if start:
        request["ExclusiveStartKey"] = start
    return request


def delete_entry_request(table: str, key: dict[str, Any], etl: int) -> dict[str, Any]:
    """Delete one entry if it still holds this etl time (a later run may have put it again)."""
    return {
        "TableName": table,
        "Key": {"eventId": key["eventId"], "fingerprint": key["fingerprint"]},
        "ConditionExpression": "etlTime = :tst",
        "ExpressionAttributeValues": {":tst": {"N": str(etl)}},
    }


def condition_failed(error: Exception) -> bool:
    return isinstance(error, ClientError) and error_code(error) == "ConditionalCheckFailedException"


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
    if condition_failed(error):
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
        return no_region()
    said = redact.text(str(error))  # the SDK's message names the endpoint URL, its password too
    if isinstance(error, SSLError):
        return ManifestUnavailableError(
            f"DynamoDB table [{table}]: the endpoint's TLS certificate is not trusted ({said}): if it is signed by "
            "a private CA, point AWS_CA_BUNDLE (or ca_bundle in the AWS profile) at that CA's certificate"
        )
    if isinstance(error, ProxyConnectionError):
        return ManifestUnavailableError(
            f"DynamoDB table [{table}]: the proxy is unreachable ({said}): check HTTPS_PROXY / HTTP_PROXY and NO_PROXY"
        )
    if isinstance(error, BotoCoreError):
        return ManifestUnavailableError(f"DynamoDB table [{table}] is unreachable: {said}")
    return ManifestUnavailableError(f"DynamoDB table [{table}]: {type(error).__name__}: {said}")
