"""A request's refusals: throttling retried, then surfaced as its own error."""

from __future__ import annotations

import uuid

import pytest

from events_manifest import DynamoDbManifest, ManifestThrottledError
from events_manifest.testing import FaultProxy, LocalServer
from tests.backends import REFERENCE_ETL, REFERENCE_FP, client_for


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_throttling_is_retried_then_surfaced(server: LocalServer, table: str) -> None:
    items = [(str(uuid.uuid4()), REFERENCE_FP, REFERENCE_ETL) for _ in range(30)]
    with FaultProxy(server.endpoint, throttle_rate=0.15, seed=7) as proxy:  # few waits of backoff
        manifest = DynamoDbManifest(client_for(proxy.endpoint, max_attempts=10), table, concurrency=8)
        assert manifest.put_many(items) == [True] * 30
        assert proxy.throttled > 0, "the proxy really throttled some puts"
        assert manifest.put_many(items) == [True] * 30, "answers after retries are the rerun answers"
        proxy.throttle_rate = 1.0
        stubborn = DynamoDbManifest(client_for(proxy.endpoint, max_attempts=2), table)
        with pytest.raises(ManifestThrottledError, match=rf"\[{table}\] is still throttling"):
            stubborn.put(str(uuid.uuid4()), REFERENCE_FP, REFERENCE_ETL)
