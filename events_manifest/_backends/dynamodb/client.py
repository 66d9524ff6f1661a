"""Building DynamoDB clients: credentials, region, endpoint, retries and pool size in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from events_manifest._aws import boto3_session, default_region, no_region
from events_manifest._backends.dynamodb.config_document import Credentials

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_CONCURRENCY = 32
"""Requests in flight per manifest in `put_many`; see docs/benchmarks.md for how it was chosen."""

DEFAULT_MAX_ATTEMPTS = 10
"""botocore's standard retry mode: exponential backoff with full jitter, capped at 20 s a wait."""


@attrs.frozen
class ClientOptions:
    """How to reach DynamoDB: the part of a client's setup that both the sync and async clients share."""

    region: str | None = None
    credentials: Credentials | None = None
    endpoint_url: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_pool_connections: int = DEFAULT_CONCURRENCY
    connect_timeout: float = 5.0
    read_timeout: float = 10.0

    def botocore_config(self) -> Config:
        """botocore's settings for the library's clients. Their requests are built by the library
        (`requests`), never from user input, so botocore's client-side validation of each one is
        turned off: about a tenth of the client's CPU per put."""
        from botocore.config import Config  # with the client: a command that opens none starts without it

        return Config(
            retries={"mode": "standard", "max_attempts": self.max_attempts},
            max_pool_connections=self.max_pool_connections,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            parameter_validation=False,
        )

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `session.client("dynamodb", ...)`, for boto3 and aioboto3 alike."""
        kwargs: dict[str, Any] = {"config": self.botocore_config()}
        region = self.region or default_region()
        if region:
            kwargs["region_name"] = region
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.credentials is not None:
            kwargs["aws_access_key_id"] = self.credentials.access_key_id
            kwargs["aws_secret_access_key"] = self.credentials.secret_access_key
        return kwargs


ADMIN_ATTEMPTS = 3
ADMIN_CONNECT_TIMEOUT = 3.0
"""Checking or creating the table at the start of a run: an unreachable endpoint fails in seconds
(3 attempts of at most 3 s to connect, with botocore's backoff between), not minutes."""


def make_client(options: ClientOptions) -> DynamoDBClient:
    """A boto3 DynamoDB client (thread-safe) for these options; no region is a `ManifestConfigError`."""
    from botocore.exceptions import NoRegionError

    try:
        return boto3_session().client("dynamodb", **options.client_kwargs())
    except NoRegionError:
        raise no_region() from None


def admin_options(options: ClientOptions) -> ClientOptions:
    """`options` for the table checks that open a run: few attempts, a short connect timeout."""
    return attrs.evolve(
        options,
        max_attempts=min(options.max_attempts, ADMIN_ATTEMPTS),
        connect_timeout=min(options.connect_timeout, ADMIN_CONNECT_TIMEOUT),
    )
