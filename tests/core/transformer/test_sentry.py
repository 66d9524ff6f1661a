"""The exception that ends a job, sent to Sentry (an HTTP server taking the SDK's envelopes), the
DSN's key never shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.sentry import Sentry
from tests.monitors import SentryServer


@pytest.fixture
def sentry() -> Iterator[SentryServer]:
    server = SentryServer()
    yield server
    server.close()


def test_sentry_gets_the_exception_and_the_dsn_s_key_is_never_shown(sentry: SentryServer) -> None:
    reporting = Sentry(sentry.dsn())
    try:
        raise RuntimeError("the run failed: boom")
    except RuntimeError as e:
        reporting.report(e)
    [event] = sentry.events
    [exception] = event["exception"]["values"]
    assert (exception["type"], exception["value"]) == ("RuntimeError", "the run failed: boom")
    with pytest.raises(TransformerConfigError) as caught:
        Sentry("not a dsn with SECRETKEY")
    assert "SECRETKEY" not in str(caught.value) and "monitoring.sentry.dsn: not a Sentry DSN" in str(caught.value)
