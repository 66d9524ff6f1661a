"""What the DynamoDB tests share: each runs on both local servers (dynalite and moto's), on a
table of its own."""

from __future__ import annotations

import pytest

from events_manifest import create_table
from events_manifest.testing import LocalServer
from tests.backends import client_for, unique_table


@pytest.fixture(params=["dynalite", "moto"])
def server(request: pytest.FixtureRequest) -> LocalServer:
    found: LocalServer = request.getfixturevalue("dynalite" if request.param == "dynalite" else "moto_server")
    return found


@pytest.fixture
def table(server: LocalServer) -> str:
    name = unique_table()
    create_table(client_for(server.endpoint), name)
    return name
