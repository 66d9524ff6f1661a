"""`monitoring.sentry.dsn`: the exception that ends a transformer sent to Sentry (the Sentry SDK),
then the job fails as it would without it, as the reference's `Main` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from events_manifest._transformer.config import TransformerConfigError

FLUSH_SECONDS = 5.0
"""How long a failing job waits for Sentry to take its exception."""
EXAMPLE = "https://KEY@o1.ingest.sentry.io/1"


class UnusableDsn(TransformerConfigError):
    """A `monitoring.sentry.dsn` the SDK cannot send to (the DSN itself never shown: it holds a key)."""


class Sentry:
    """The SDK set up for one DSN (the process's Sentry client, as its `init` makes it): nothing
    else of the process is captured (no integrations: its logging, threads and uncaught exceptions
    stay the job's), only what `report` is given, and of that no local variable (the command
    line's base64 configs and what they decode to hold credentials)."""

    def __init__(self, dsn: str) -> None:
        try:
            import sentry_sdk
        except ImportError:
            raise TransformerConfigError(
                'monitoring.sentry.dsn needs the Sentry SDK: pip install "events-manifest[spark]" (or sentry-sdk)'
            ) from None
        try:
            sentry_sdk.init(
                dsn, default_integrations=False, auto_enabling_integrations=False, include_local_variables=False
            )
        except Exception:  # the SDK's BadDsn, whose text holds the DSN (its key): not shown
            raise UnusableDsn(
                f"DecodingFailure at .monitoring.sentry.dsn: not a Sentry DSN, such as {EXAMPLE}"
            ) from None
        self._sdk: Any = sentry_sdk

    def report(self, error: BaseException) -> None:
        """Send `error` (with its traceback) and wait, a bounded time, until it is sent."""
        self._sdk.capture_exception(error)
        self._sdk.flush(timeout=FLUSH_SECONDS)


def sentry_of(dsn: str | None, warn: Callable[[str], None]) -> Sentry | None:
    """Sentry for `dsn`, or None: none set, or one the SDK cannot send to (such as the reference's
    own placeholder `http://sentry.acme.com`, which has no key), said once by `warn` while the job
    goes on, since the reference reads such a config."""
    if not dsn:
        return None
    try:
        return Sentry(dsn)
    except UnusableDsn:
        warn(f"monitoring.sentry.dsn cannot be used (not a Sentry DSN, such as {EXAMPLE}): failures go unreported")
        return None
