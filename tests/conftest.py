"""Real components for the suite: dynalite and moto servers on free loopback ports, and backends."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest import DEFAULT_TTL, DuplicateStorage, manifest_from_url
from events_manifest.testing import LocalServer, start_dynalite, start_moto

ROOT = Path(__file__).resolve().parent.parent

# Local servers accept any credentials; never let the suite pick up a real account's.
os.environ.update(
    AWS_ACCESS_KEY_ID="test-access-key",
    AWS_SECRET_ACCESS_KEY="test-secret-key",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_EC2_METADATA_DISABLED="true",
)
for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
    os.environ.pop(variable, None)


@pytest.fixture(scope="session")
def dynalite() -> Iterator[LocalServer]:
    with start_dynalite(ROOT) as server:
        yield server


@pytest.fixture(scope="session")
def moto_server() -> Iterator[LocalServer]:
    with start_moto() as server:
        yield server


def ttl_text(ttl: timedelta) -> str:
    return f"{int(ttl.total_seconds())}s"


@attrs.define
class Backend:
    """Makes fresh, empty manifests of one kind; `url` names one that other processes can open."""

    name: str
    url: Callable[[timedelta], str]
    shared_across_processes: bool
    opened: list[DuplicateStorage] = attrs.field(factory=list)

    def make(self, ttl: timedelta = DEFAULT_TTL) -> DuplicateStorage:
        manifest = manifest_from_url(self.url(ttl))
        self.opened.append(manifest)
        return manifest


def unique_table() -> str:
    return f"manifest-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["memory", "sqlite", "dynalite", "moto"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    name = request.param
    if name == "memory":
        made = Backend(name, lambda ttl: f"memory://?ttl={ttl_text(ttl)}", shared_across_processes=False)
    elif name == "sqlite":
        path = tmp_path / "manifest.db"
        made = Backend(name, lambda ttl: f"sqlite://{path}?ttl={ttl_text(ttl)}", shared_across_processes=True)
    else:
        server: LocalServer = request.getfixturevalue("dynalite" if name == "dynalite" else "moto_server")
        table = unique_table()
        made = Backend(
            name,
            lambda ttl: (
                f"dynamodb://{table}?region=us-east-1&endpoint={server.endpoint}&create=true"
                f"&ttl={ttl_text(ttl)}&max_attempts=3"
            ),
            shared_across_processes=True,
        )
    yield made
    for manifest in made.opened:
        manifest.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of the suite (its Python workers can import `tests`)."""
    pytest.importorskip("pyspark")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    from spark_integration.session import local_session

    session = local_session("local[2]", "events-manifest-tests", **{"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
