"""Manifest URLs and third-party backends found through entry points."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from events_manifest import InMemoryManifest, ManifestConfigError, SqliteManifest, manifest_from_url, parse_duration
from events_manifest._opening.urls import known_schemes

PLUGIN = """
from events_manifest import InMemoryManifest

class CountingManifest(InMemoryManifest):
    def __init__(self, url):
        super().__init__()
        self.url = url
        self.batches = 0

    def _put_batch(self, batch):
        self.batches += 1
        return super()._put_batch(batch)

def open_counting(url):
    return CountingManifest(url)
"""


DOCUMENTED_GROUP = re.search(
    r'\[project\.entry-points\."([\w.]+)"\]', (Path(__file__).parents[3] / "docs" / "manifest.md").read_text()
)
"""The entry-point group the manual tells a backend's author to register under."""


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[None]:
    """A third-party distribution that registers the `counting` scheme under the manual's group,
    installed on sys.path."""
    assert DOCUMENTED_GROUP is not None
    (tmp_path / "counting_backend.py").write_text(PLUGIN)
    info = tmp_path / "counting_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: counting-backend\nVersion: 1.0\n")
    group = DOCUMENTED_GROUP.group(1)
    (info / "entry_points.txt").write_text(f"[{group}]\ncounting = counting_backend:open_counting\n")
    sys.path.insert(0, str(tmp_path))
    yield
    sys.path.remove(str(tmp_path))
    sys.modules.pop("counting_backend", None)


def test_entry_point_backend_is_found(plugin: None) -> None:
    manifest = manifest_from_url("counting://anything")
    assert type(manifest).__name__ == "CountingManifest"
    assert manifest.put_many([("c6ef3124-b53a-4b13-a233-0088f79dcbcb", "f", datetime(2020, 1, 1))]) == [True]
    assert manifest.batches == 1  # type: ignore[attr-defined]
    assert "counting" in known_schemes()


def test_unknown_scheme_lists_known_ones() -> None:
    with pytest.raises(ManifestConfigError, match=r"no manifest backend for URL scheme \[redis\]: known are .*sqlite"):
        manifest_from_url("redis://localhost")


def test_builtin_urls(tmp_path: Path) -> None:
    memory = manifest_from_url("memory://?ttl=12h")
    assert isinstance(memory, InMemoryManifest) and memory.ttl == timedelta(hours=12)
    sqlite = manifest_from_url(f"sqlite://{tmp_path}/a.db?cache_mib=8")
    assert isinstance(sqlite, SqliteManifest) and sqlite.path == tmp_path / "a.db"
    sqlite.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("no-scheme", "has no scheme"),
        ("memory://?tll=1d", r"unknown parameter\(s\) tll"),
        ("memory://?ttl=forever", r"ttl \[forever\] is not a positive duration"),
        ("memory://?ttl=99999999999d", r"ttl \[99999999999d\] is longer than 36500d \(a hundred years\)"),
        ("sqlite://", "names no file"),
        ("dynamodb://table-x?concurrency=0", r"concurrency \[0\] must be a positive integer"),
        ("dynamodb://bad%20name?region=us-east-1", "is not a valid DynamoDB table name"),
        ("dynamodb://table-x?region=mars", r"\[mars\] is not an AWS region name"),
        ("dynamodb://table-x?endpoint=file:///etc/passwd", "must be an http"),
        ("dynamodb://table-x?create=maybe", r"create \[maybe\] must be true or false"),
    ],
)
def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(ManifestConfigError, match=message):
        manifest_from_url(url)


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("12h", 43200), ("180d", 15552000), ("2w", 1209600)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


def test_the_core_imports_no_optional_dependency() -> None:
    """`pip install events-manifest` has neither pyspark nor aioboto3: the core must not need them."""
    import subprocess
    import sys

    code = "import sys, events_manifest, events_manifest._dedup.engine, events_manifest.aio, events_manifest._cli; "
    optional = ("pyspark", "aiohttp", "aioboto3", "hypothesis", "pandas", "msgspec")
    code += f"print(sorted(m for m in {optional!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
