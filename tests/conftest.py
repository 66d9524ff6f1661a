"""Real components for the suite: dynalite and moto servers on free loopback ports, and backends."""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from events_manifest.aio import async_manifest_from_url
from events_manifest.testing import LocalServer, start_dynalite, start_moto, start_pubsub_emulator
from tests import jvm_archive, local_fs
from tests.backends import ASYNC_BACKENDS, BACKENDS, Backend, aioboto3_manifest, backend_of

ROOT = Path(__file__).resolve().parent.parent

# Local servers accept any credentials; never let the suite pick up a real account's.
os.environ.update(
    AWS_ACCESS_KEY_ID="test-access-key",
    AWS_SECRET_ACCESS_KEY="test-secret-key",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_EC2_METADATA_DISABLED="true",
)
# The suite's JVMs (its Spark session and every job it starts as a process) handle small data:
# their start-up is the cost (`tests.jvm_archive`).
os.environ.setdefault("SPARK_SUBMIT_OPTS", jvm_archive.options())
# Spark's Python workers import `tests` (the suite's manifests travel to them pickled), whichever
# test starts the session: a fixture's, or a job's command line run in this process.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
    os.environ.pop(variable, None)


# Hypothesis's checks of time (a slow draw, a slow example) fail a correct test on a loaded machine:
# the suite's time is held by its budget (docs/development.md), not by them.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` first (in their order), so that the workers end together where a long
    test left to the end would run alone (how `--dist load` places them: docs/development.md)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made frozen out of the garbage collector's walks, and its collections rarer
    than Python's every 700 objects: a seventh of `tests/core`'s CPU went to them (docs/development.md)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 50, 100)


@pytest.fixture(scope="session")
def dynalite() -> Iterator[LocalServer]:
    with start_dynalite(ROOT, table_ms=20) as server:
        yield server


@pytest.fixture(scope="session")
def moto_server() -> Iterator[LocalServer]:
    with start_moto() as server:
        yield server


@pytest.fixture(scope="session")
def pubsub_emulator() -> Iterator[LocalServer]:
    """The Pub/Sub emulator; this process's Pub/Sub clients reach it (`PUBSUB_EMULATOR_HOST`)."""
    with start_pubsub_emulator() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{server.port}")
        yield server


@pytest.fixture(params=BACKENDS + ASYNC_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    name = request.param.removeprefix("async-").removeprefix("aioboto3-")
    made = backend_of(request, name, tmp_path)
    if request.param.startswith("async-"):
        made.async_open = async_manifest_from_url
    elif request.param.startswith("aioboto3-"):
        made.async_open = aioboto3_manifest
    made.name = request.param
    yield made
    for manifest in made.opened:
        manifest.close()


@pytest.fixture
def sdk_pauses_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's retry pauses (its standard mode: a random part of 1, 2, 4... s) a hundredth as long
    in this process: the SDK retries as users get it, and the test does not wait out its jitter. For
    tests that assert what the retries give, not how long they take."""
    from botocore.retries.standard import ExponentialBackoff

    delay = ExponentialBackoff.delay_amount
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: delay(self, context) / 100)


SMALL_DATA = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}
"""The suite's session holds small data: two shuffle partitions, and Spark's own default heap of
1 GB rather than a local session's 4 (`spark_integration.session`): the JVM's collector grows and
touches less memory, and the machine spends less on it (docs/development.md)."""


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of the suite (its Python workers can import `tests`), on the
    local file system of `tests.local_fs`."""
    pytest.importorskip("pyspark")
    from spark_integration.session import local_session

    settings: dict[str, Any] = {**SMALL_DATA, **local_fs.settings()}
    session = local_session("local[2]", "events-manifest-tests", **settings)
    yield session
    session.stop()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Spark's handler would reach a stopped context
