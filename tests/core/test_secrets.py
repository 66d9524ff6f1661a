"""A secret key from a config never reaches logs, reprs or error messages."""

from __future__ import annotations

import logging
import socket
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from events_manifest import ManifestError, init_storage, parse_config
from events_manifest.testing import FaultProxy, LocalServer
from tests.backends import unique_table
from tests.commands import process
from tests.core.backends.dynamodb.test_config_document import SECRET, V2_CONFIG, with_data


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_secret_absent_from_debug_logs_reprs_and_errors(
    dynalite: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    table = unique_table()
    config = parse_config(with_data(V2_CONFIG, dynamodbTable=table, awsRegion="us-east-1"))
    seen: list[str] = [repr(config), str(config)]
    with caplog.at_level(logging.DEBUG):
        try:
            init_storage(config, endpoint_url=dynalite.endpoint)
        except ManifestError as e:
            seen += [str(e), repr(e), repr(e.__cause__)]
        else:
            pytest.fail("the table does not exist yet")
        with init_storage(config, endpoint_url=dynalite.endpoint, create_if_missing=True) as manifest:
            assert manifest.put(str(uuid.uuid4()), "f", datetime(2020, 1, 1))
            seen.append(repr(manifest))
        with FaultProxy(dynalite.endpoint, throttle_rate=1.0) as proxy:
            throttled = init_storage(config, endpoint_url=proxy.endpoint, max_attempts=2)
            with pytest.raises(ManifestError) as raised:
                throttled.put(str(uuid.uuid4()), "f", datetime(2020, 1, 1))
            seen += [str(raised.value), repr(raised.value)]
    assert "Making request for OperationModel(name=DescribeTable" in caplog.text, "botocore's debug log was captured"
    assert "Retry needed, retrying request after delay" in caplog.text, "botocore's retry log was captured"
    seen.append(caplog.text)
    assert all(SECRET not in text for text in seen)


PLANTED = "Pl4nted-S3cret"


def test_an_endpoint_s_password_is_never_shown_by_the_command_line(tmp_path: Path) -> None:
    """`events-manifest runs` as a user types it: the SDK's own message names the endpoint URL, the
    table-name refusal the manifest URL; neither shows the password."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    endpoint = f"http://user:{PLANTED}@127.0.0.1:{port}"
    for table, said in [("probe-t", "is unreachable"), ("t", "is not a valid DynamoDB table name")]:
        url = f"dynamodb://{table}?region=us-east-1&endpoint={endpoint}&max_attempts=1"  # no backoff waited
        done = process("events_manifest", tmp_path, "runs", "--manifest", url, timeout=120)
        assert done.returncode != 0 and said in done.stderr, done.stderr
        assert PLANTED not in done.stdout + done.stderr and f"user:***@127.0.0.1:{port}" in done.stderr
