"""The exception that ends a job, sent to Sentry (an HTTP server taking the SDK's envelopes), the
DSN's key never shown."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.run.sentry import Sentry, sentry_of
from tests.monitors import SentryServer


@pytest.fixture
def sentry() -> Iterator[SentryServer]:
    server = SentryServer()
    yield server
    server.close()


def test_sentry_gets_the_exception_without_what_the_frames_held(sentry: SentryServer) -> None:
    """The exception and its traceback; not the frames' variables (a command line's base64
    config, what it decodes to)."""
    reporting = sentry_of(sentry.dsn(), warn=pytest.fail)
    assert reporting is not None

    config = base64.b64encode(json.dumps({"aws": {"secretKey": "AWS" + "SECRET"}}).encode()).decode()

    def run(config: str) -> None:
        decoded = base64.b64decode(config).decode()  # what a job's frames hold: the value, what it decodes to
        raise RuntimeError(f"the run failed: boom ({len(decoded)})")

    try:
        run(config)
    except RuntimeError as e:
        reporting.report(e)
    [event] = sentry.events
    [exception] = event["exception"]["values"]
    assert (exception["type"], exception["value"]) == ("RuntimeError", "the run failed: boom (35)")
    assert [frame["function"] for frame in exception["stacktrace"]["frames"]][-1] == "run"
    sent = json.dumps(event)
    assert "AWSSECRET" not in sent and config not in sent, sent


@pytest.mark.parametrize("dsn", ["http://sentry.acme.com", "not a dsn with SECRETKEY"])
def test_a_dsn_that_cannot_be_used_is_said_once_and_the_job_goes_on(dsn: str) -> None:
    """The reference's own placeholder (no key) is read by the reference: one warning, no Sentry,
    the DSN never shown."""
    said: list[str] = []
    assert sentry_of(dsn, warn=said.append) is None
    assert said == [
        "monitoring.sentry.dsn cannot be used (not a Sentry DSN, such as https://KEY@o1.ingest.sentry.io/1): "
        "failures go unreported"
    ]
    with pytest.raises(TransformerConfigError) as caught:
        Sentry(dsn)
    assert "SECRETKEY" not in str(caught.value) and "monitoring.sentry.dsn: not a Sentry DSN" in str(caught.value)
    assert sentry_of(None, warn=pytest.fail) is None
