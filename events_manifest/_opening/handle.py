"""How the engine reaches a manifest: `ManifestHandle` gets one to Spark's Python workers (one open
manifest per worker process); `InProcess` is a manifest used where it was opened."""

from __future__ import annotations

import atexit
import contextlib
import pickle
import threading

import attrs

from events_manifest._backends.sqlite import SqliteManifest
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._opening.urls import manifest_from_url, shared_by_workers, worker_url
from events_manifest.errors import ManifestConfigError

_OPEN: dict[bytes | str, DuplicateStorage] = {}
_LOCK = threading.Lock()


@atexit.register
def _close_opened() -> None:
    """Close what this process opened through a handle as it exits: a SQLite manifest's connection
    closed in time takes its `-wal` and `-shm` files with it (left to the interpreter's teardown,
    whether it was closed depended on the order objects went in)."""
    with _LOCK:
        opened = list(_OPEN.values())
        _OPEN.clear()
    for manifest in opened:
        with contextlib.suppress(Exception):
            manifest.close()


@attrs.frozen
class ManifestHandle:
    """A picklable reference to a manifest: its URL, or the manifest itself pickled.

    `open()` in a worker process opens it once and reuses it for every later batch and task.
    """

    url: str | None = None
    pickled: bytes | None = attrs.field(default=None, repr=False)

    @classmethod
    def of(cls, manifest: str | DuplicateStorage) -> ManifestHandle:
        if isinstance(manifest, str):
            check_shared(manifest)
            return cls(url=worker_url(manifest))
        if type(manifest) is SqliteManifest:
            return cls(url=manifest.url)
        try:
            return cls(pickled=pickle.dumps(manifest))
        except (TypeError, pickle.PicklingError, AttributeError) as e:
            raise ManifestConfigError(
                f"{type(manifest).__name__} cannot go to Spark's workers ({e}). {_NOT_SHARED}"
            ) from e

    def open(self) -> DuplicateStorage:
        key = self.url if self.url is not None else self.pickled
        assert key is not None
        with _LOCK:
            manifest = _OPEN.get(key)
            if manifest is None:
                manifest = manifest_from_url(self.url) if self.url is not None else pickle.loads(key)  # type: ignore[arg-type]
                _OPEN[key] = manifest
        return manifest

    def describe(self) -> str:
        return self.url if self.url is not None else "a pickled manifest"


def check_shared(url: str) -> None:
    """Refuse a manifest URL Spark's workers cannot share, before anything opens it."""
    if not shared_by_workers(url):
        raise ManifestConfigError(_NOT_SHARED)


_NOT_SHARED = (
    "Spark's Python workers are separate processes, so an in-memory manifest would not be shared: "
    "use sqlite:///path/manifest.db, a dynamodb:// URL, or a manifest from init_storage"
)


@attrs.frozen
class InProcess:
    """A manifest the engine uses in the process that opened it (a Python consumer's own)."""

    manifest: DuplicateStorage

    def open(self) -> DuplicateStorage:
        return self.manifest

    def describe(self) -> str:
        return type(self.manifest).__name__


Opener = ManifestHandle | InProcess
"""What the engine is given to reach its manifest: `open()` returns it, ready for puts."""
