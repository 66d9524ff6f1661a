"""The DynamoDB client and the network: the SDK's own settings, a private CA (`AWS_CA_BUNDLE`) and an
HTTPS proxy (`HTTPS_PROXY`), sync and async, against dynalite behind a TLS endpoint on loopback; an
endpoint that does not answer named."""

from __future__ import annotations

import asyncio
import re
import ssl
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import trustme

from events_manifest import ManifestUnavailableError, manifest_from_url
from events_manifest._backends.dynamodb import ClientOptions
from events_manifest.aio import AsyncDynamoDbManifest
from events_manifest.testing._proxy import ConnectProxy, FaultProxy
from events_manifest.testing._servers import LocalServer, free_port
from tests.backends import unique_table

ETL = datetime(2026, 11, 1, 6)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    """A throwaway CA, made here; its certificate in a file, as AWS_CA_BUNDLE takes it."""
    authority = trustme.CA()
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return authority, path


@pytest.fixture
def tls_endpoint(dynalite: LocalServer, ca: tuple[trustme.CA, Path]) -> Iterator[FaultProxy]:
    """dynalite behind HTTPS, with a certificate for localhost signed by the throwaway CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca[0].issue_cert("localhost", "127.0.0.1").configure_cert(context)
    with FaultProxy(dynalite.endpoint, tls=context) as front:
        yield front


@pytest.fixture(autouse=True)
def _network_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)


def _items(n: int) -> list[tuple[str, str, datetime]]:
    return [(str(uuid.uuid4()), "fp", ETL) for _ in range(n)]


async def _async_puts(endpoint: str, table: str, items: list[tuple[str, str, datetime]]) -> list[bool]:
    options = ClientOptions(region="us-east-1", endpoint_url=endpoint)
    async with await AsyncDynamoDbManifest.open(options, table, concurrency=8) as manifest:
        return await manifest.put_many(items)


def test_a_private_ca_is_trusted_through_aws_ca_bundle(
    tls_endpoint: FaultProxy, ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = unique_table()
    url = f"dynamodb://{table}?region=us-east-1&endpoint={tls_endpoint.endpoint}&create=true"
    with pytest.raises(ManifestUnavailableError) as untrusted:
        manifest_from_url(f"{url}&max_attempts=1")  # refused at the first attempt: no backoff waited
    message = str(untrusted.value)
    assert f"DynamoDB table [{table}]: the endpoint's TLS certificate is not trusted" in message
    assert "CERTIFICATE_VERIFY_FAILED" in message and "point AWS_CA_BUNDLE" in message

    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca[1]))
    items = _items(20)
    with manifest_from_url(url) as manifest:
        assert manifest.put_many(items) == [True] * 20
        assert manifest.put_many(items[:5]) == [True] * 5, "the same etl time: a rerun, accepted"
    assert asyncio.run(_async_puts(tls_endpoint.endpoint, table, _items(10) + items[:2])) == [True] * 12
    assert tls_endpoint.requests >= 20 + 5 + 12


def test_every_request_goes_through_the_https_proxy(
    tls_endpoint: FaultProxy, ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = unique_table()
    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca[1]))
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        url = f"dynamodb://{table}?region=us-east-1&endpoint={tls_endpoint.endpoint}&create=true"
        with manifest_from_url(url) as manifest:
            assert manifest.put_many(_items(30)) == [True] * 30
        assert asyncio.run(_async_puts(tls_endpoint.endpoint, table, _items(30))) == [True] * 30
        assert proxy.tunnels > 0
        assert tls_endpoint.requests >= 60
        assert tls_endpoint.peers <= proxy.upstream_ports, "every connection to the endpoint came through a tunnel"


def test_an_unreachable_proxy_is_named(tls_endpoint: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:1")
    with pytest.raises(ManifestUnavailableError, match=r"the proxy is unreachable .*check HTTPS_PROXY"):
        manifest_from_url(
            f"dynamodb://{unique_table()}?region=us-east-1&endpoint={tls_endpoint.endpoint}&max_attempts=1"
        )  # one attempt: the proxy is named in the first one's failure, no backoff waited


def test_unreachable_endpoint_is_named() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ManifestUnavailableError, match=re.escape(endpoint)):
        manifest_from_url(f"dynamodb://some-table?region=us-east-1&endpoint={endpoint}&max_attempts=1")
