"""The lean path signs exactly as botocore does."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from events_manifest.backends.dynamodb.wire import Reply, Signer, encode


@pytest.mark.parametrize("token", [None, "session-token"])
def test_signature_matches_botocore(token: str | None) -> None:
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    when = datetime(2026, 11, 22, 4, 5, 6, tzinfo=UTC)
    body = encode({"TableName": "t", "Item": {"eventId": {"S": "é"}}})
    ours = Signer(credentials, "eu-west-1", "dynamodb.eu-west-1.amazonaws.com").headers("PutItem", body, when)

    request = AWSRequest(
        "POST",
        "https://dynamodb.eu-west-1.amazonaws.com/",
        data=body,
        headers={k: v for k, v in ours.items() if k != "authorization"},
    )
    request.context["timestamp"] = "20261122T040506Z"
    auth = SigV4Auth(credentials, "dynamodb", "eu-west-1")
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    assert ours["authorization"].endswith(f"Signature={expected}")
    assert f"SignedHeaders={auth.signed_headers(auth.headers_to_sign(request))}," in ours["authorization"]


def test_replies_map_to_the_sdk_errors() -> None:
    throttled = Reply(400, b'{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}')
    assert throttled.retryable
    assert throttled.error("PutItem").response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    failed = Reply(400, b'{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"x"}')
    assert not failed.retryable
    assert failed.error("PutItem").response["Error"] == {"Code": "ConditionalCheckFailedException", "Message": "x"}
    assert Reply(503, b"").retryable
    assert Reply(failure=ConnectionResetError()).retryable
