"""The SDK's sessions share what they read from disk, and nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.loaders import JSONFileLoader

from events_manifest._aws import aioboto3_session, boto3_session

REGION, ENDPOINT = "eu-west-1", "http://127.0.0.1:9"


def test_sessions_share_one_loader_whose_paths_do_not_grow() -> None:
    first, second = boto3_session(), boto3_session()
    loader = first._session.get_component("data_loader")
    assert second._session.get_component("data_loader") is loader
    assert aioboto3_session()._session.get_component("data_loader") is loader
    paths = list(loader.search_paths)
    for _ in range(3):
        boto3_session().client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT)
    assert loader.search_paths == paths
    assert len(set(paths)) == len(paths) and any(path.endswith("boto3/data") for path in paths)


def test_each_session_finds_its_credentials_and_region_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "first-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    first = boto3_session()
    assert access_key(first) == "first-key" and first.region_name == "eu-west-1"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "second-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    second = boto3_session()
    assert access_key(second) == "second-key" and second.region_name == "ap-south-1"
    assert access_key(first) == "first-key"


def access_key(session: boto3.session.Session) -> str:
    credentials = session.get_credentials()
    assert credentials is not None
    return credentials.access_key


def test_a_client_after_the_first_reads_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the shared loader: the first client reads the DynamoDB model, later ones do not."""
    boto3_session().client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT)
    read: list[str] = []
    load_file = JSONFileLoader.load_file

    def counted(self: JSONFileLoader, path: str, *args: Any) -> Any:
        read.append(path)
        return load_file(self, path, *args)

    monkeypatch.setattr(JSONFileLoader, "load_file", counted)
    client = boto3_session().client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT)
    assert client.meta.service_model.service_name == "dynamodb"
    assert read == []


def test_aioboto3_clients_work_on_the_shared_loader() -> None:
    async def make() -> str:
        async with aioboto3_session().client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT) as client:
            return str(client.meta.service_model.service_name)

    assert asyncio.run(make()) == "dynamodb"
