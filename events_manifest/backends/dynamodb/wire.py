"""The lean DynamoDB path: a conditional PutItem as one signed HTTP POST, without the SDK's
per-call machinery (parameter validation, event hooks, generic serialisers), which costs most of
the client's CPU for a request this small (see docs/benchmarks.md).

It keeps what matters: SigV4 signing with the credentials botocore finds (refreshed when they
expire), botocore's standard retry policy (exponential backoff, full jitter), and the SDK's error
meanings (errors are handed to the same `requests.put_outcome` as the boto3 path). Only the I/O
differs between `WireClient` (http.client, threads) and `AsyncWireClient` (aiohttp).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import queue
import random
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import attrs
import botocore.session
from botocore.credentials import Credentials as BotocoreCredentials
from botocore.exceptions import ClientError

from events_manifest.backends.dynamodb import requests
from events_manifest.backends.dynamodb.client import ClientOptions, make_client
from events_manifest.backends.dynamodb.requests import THROTTLING_CODES
from events_manifest.errors import ManifestConfigError, ManifestRequestError, ManifestUnavailableError
from events_manifest.model import ManifestEntry

log = logging.getLogger(__name__)

TARGET_PREFIX = "DynamoDB_20120810."
CONTENT_TYPE = "application/x-amz-json-1.0"
MAX_BACKOFF = 20.0
TRANSIENT_CODES = frozenset(
    {"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete", "InternalServerError"}
)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


@attrs.define
class Signer:
    """AWS Signature Version 4 for DynamoDB's JSON protocol; the signing key is kept per day."""

    credentials: BotocoreCredentials
    region: str
    host: str
    _keys: dict[tuple[str, str], bytes] = attrs.field(factory=dict, repr=False)

    def headers(self, target: str, body: bytes, now: datetime | None = None) -> dict[str, str]:
        now = now or datetime.now(UTC)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        frozen = self.credentials.get_frozen_credentials()
        headers = {
            "content-type": CONTENT_TYPE,
            "host": self.host,
            "x-amz-date": amz_date,
            "x-amz-target": TARGET_PREFIX + target,
        }
        if frozen.token:
            headers = dict(sorted({**headers, "x-amz-security-token": frozen.token}.items()))
        signed = ";".join(headers)  # SigV4 signs the lowercase names in sorted order
        canonical = "POST\n/\n\n{}\n{}\n{}".format(
            "".join(f"{k}:{v}\n" for k, v in headers.items()), signed, hashlib.sha256(body).hexdigest()
        )
        scope = f"{day}/{self.region}/dynamodb/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        secret = frozen.secret_key or ""
        key = self._keys.get((day, secret))
        if key is None:
            key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), self.region), "dynamodb"), "aws4_request")
            self._keys = {(day, secret): key}
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={frozen.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
        )
        return headers


@attrs.frozen
class Endpoint:
    """Where requests go and how they are signed, resolved once from `ClientOptions`."""

    url: str
    signer: Signer

    @classmethod
    def resolve(cls, options: ClientOptions) -> Endpoint:
        session = botocore.session.Session()
        region = options.region or session.get_config_variable("region")
        if not region:
            raise ManifestConfigError("no AWS region given: set awsRegion in the config or region= in the URL")
        if options.credentials is not None:
            credentials = BotocoreCredentials(options.credentials.access_key_id, options.credentials.secret_access_key)
        else:
            found = session.get_credentials()
            if found is None:
                raise ManifestUnavailableError(
                    "no AWS credentials found: put them in the config's auth or configure the default AWS chain"
                )
            credentials = found
        url = options.endpoint_url or make_client(attrs.evolve(options, region=region)).meta.endpoint_url
        host = urlsplit(url).netloc
        return cls(url=url, signer=Signer(credentials, region, host))


@attrs.frozen
class Reply:
    """An HTTP answer, or the connection error that stood in its place."""

    status: int = 0
    body: bytes = b""
    failure: Exception | None = None

    @property
    def code(self) -> str:
        if self.status == 200 or not self.body:
            return ""
        try:
            kind = json.loads(self.body).get("__type", "")
        except ValueError:
            return ""
        return str(kind).rsplit("#", 1)[-1]

    @property
    def retryable(self) -> bool:
        return self.failure is not None or self.status >= 500 or self.code in THROTTLING_CODES | TRANSIENT_CODES

    def put_outcome(self, table: str) -> bool | ManifestRequestError:
        """What this answer to a conditional PutItem means, exactly as for the boto3 path."""
        return True if self.status == 200 else requests.put_outcome(self.error("PutItem"), table)

    def lookup_outcome(self, table: str) -> ManifestEntry | None:
        """The entry a GetItem answer holds, or the error it stands for, raised."""
        if self.status != 200:
            raise requests.manifest_error(self.error("GetItem"), table)
        return requests.entry_from_item(json.loads(self.body).get("Item"))

    def query_page(self, table: str) -> dict[str, Any]:
        """The page a Query answer holds, or the error it stands for, raised."""
        if self.status != 200:
            raise requests.manifest_error(self.error("Query"), table)
        page: dict[str, Any] = json.loads(self.body)
        return page

    def error(self, operation: str) -> ClientError:
        """This answer as the botocore error the SDK would raise, for the shared outcome logic."""
        message = ""
        if self.body:
            try:
                document = json.loads(self.body)
                message = document.get("message") or document.get("Message") or ""
            except ValueError:
                message = self.body[:200].decode("utf-8", "replace")
        response: Any = {"Error": {"Code": self.code or f"HTTP{self.status}", "Message": message}}
        return ClientError(response, operation)


def backoff(attempt: int) -> float:
    """botocore's standard mode: full jitter over 2**(attempt-1) seconds, capped at 20 s."""
    return random.random() * min(MAX_BACKOFF, 2.0 ** (attempt - 1))


def retry_delay(endpoint: Endpoint, target: str, attempt: int, reply: Reply) -> float:
    delay = backoff(attempt)
    reason = reply.code or (type(reply.failure).__name__ if reply.failure else f"HTTP {reply.status}")
    log.debug("retrying %s to %s in %.3f s after attempt %d: %s", target, endpoint.url, delay, attempt, reason)
    return delay


def encode(request: dict[str, Any]) -> bytes:
    return json.dumps(request, separators=(",", ":")).encode()


def unreachable(endpoint: Endpoint, failure: Exception) -> ManifestUnavailableError:
    return ManifestUnavailableError(
        f"DynamoDB endpoint {endpoint.url} is unreachable after every retry: {type(failure).__name__}: {failure}"
    )


class WireClient:
    """Blocking requests over a pool of keep-alive connections, safe to share between threads."""

    def __init__(self, endpoint: Endpoint, *, max_attempts: int, pool_size: int, timeout: float) -> None:
        self.endpoint = endpoint
        self.max_attempts = max_attempts
        parts = urlsplit(endpoint.url)
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname or "", parts.port
        self._timeout = timeout
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue(maxsize=pool_size)

    def _connection(self) -> http.client.HTTPConnection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            return kind(self._host, self._port, timeout=self._timeout)

    def _send(self, target: str, body: bytes) -> Reply:
        conn = self._connection()
        try:
            conn.request("POST", "/", body, self.endpoint.signer.headers(target, body))
            response = conn.getresponse()
            reply = Reply(response.status, response.read())
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            return Reply(failure=e)
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()
        return reply

    def call(self, target: str, request: dict[str, Any]) -> Reply:
        """Send with botocore's standard retries; the last reply (or ManifestUnavailableError)."""
        body = encode(request)
        for attempt in range(1, self.max_attempts + 1):
            reply = self._send(target, body)
            if not reply.retryable or attempt == self.max_attempts:
                break
            time.sleep(retry_delay(self.endpoint, target, attempt, reply))
        if reply.failure is not None:
            raise unreachable(self.endpoint, reply.failure)
        return reply

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class AsyncWireClient:
    """The same requests on aiohttp, for the event loop."""

    def __init__(self, endpoint: Endpoint, *, max_attempts: int, pool_size: int, timeout: float) -> None:
        import aiohttp

        self.endpoint = endpoint
        self.max_attempts = max_attempts
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=pool_size), timeout=aiohttp.ClientTimeout(total=timeout)
        )

    async def _send(self, target: str, body: bytes) -> Reply:
        import aiohttp

        try:
            async with self._session.post(
                self.endpoint.url, data=body, headers=self.endpoint.signer.headers(target, body)
            ) as response:
                return Reply(response.status, await response.read())
        except (OSError, aiohttp.ClientError, TimeoutError) as e:
            return Reply(failure=e)

    async def call(self, target: str, request: dict[str, Any]) -> Reply:
        import asyncio

        body = encode(request)
        for attempt in range(1, self.max_attempts + 1):
            reply = await self._send(target, body)
            if not reply.retryable or attempt == self.max_attempts:
                break
            await asyncio.sleep(retry_delay(self.endpoint, target, attempt, reply))
        if reply.failure is not None:
            raise unreachable(self.endpoint, reply.failure)
        return reply

    async def close(self) -> None:
        await self._session.close()
