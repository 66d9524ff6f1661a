"""The shred job's outputs (docs/shred-job.md): written by Spark under a staging folder, then moved
into place through Hadoop's FileSystem (`_storage.HadoopStorage`), so a failed run leaves no partial
output and any Hadoop file system (local, HDFS, S3A) works.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from events_manifest._jobs.face import STAGING_PREFIX, join
from events_manifest._snowplow.face import (
    ATOMIC,
    ATOMIC_KIND,
    BAD_KIND,
    NO_TYPE,
    PARTITIONS,
    SCHEMA_PARTS,
    SHREDDED,
    SHREDDED_KIND,
)
from spark_integration._storage import HadoopStorage


def write_outputs(rows: DataFrame, path: str) -> str:
    """Write output lines (`shred_output.LINES_SCHEMA`) to `path`, partitioned by kind and type, in one
    job; returns `path`."""
    written = rows.filter(F.col("value").isNotNull()).select(*PARTITIONS, "value")
    written.write.partitionBy(*PARTITIONS).text(path)
    return path


def staged(path: str, kind: str) -> str:
    """Where the lines of one kind are under the staging folder (shredded: a `type=` folder per
    type, see `type_folder`)."""
    folder = join(path, f"kind={kind}")
    return folder if kind == SHREDDED_KIND else join(folder, f"type={NO_TYPE}")


Move = tuple[str, str, Callable[[str], str] | None]
"""A staged folder, where it goes, and where each of its children goes (see `Staging.commit`)."""


def places(written: Sequence[str], output_path: str, bad_path: str) -> list[Move]:
    """Where the lines staged by `write_outputs` at each of `written` go: atomic lines and each
    shredded type under the output folder, bad rows into the bad folder."""
    atomic, shredded = join(output_path, ATOMIC), join(output_path, SHREDDED)
    return [
        move
        for path in written
        for move in (
            (staged(path, ATOMIC_KIND), atomic, None),
            (staged(path, SHREDDED_KIND), shredded, type_folder),
            (staged(path, BAD_KIND), bad_path, str),
        )
    ]


def type_folder(staged_name: str) -> str:
    """The folder under `shredded-types/` of a staged `type=` folder: Spark's partitioned write
    escapes the slashes of `vendor/name/format/version` (as `%2F`), which Iglu names never hold."""
    parts = unquote(staged_name.removeprefix("type=")).split("/")
    return "/".join(f"{name}={part}" for name, part in zip(SCHEMA_PARTS, parts, strict=True))


class Staging:
    """Outputs written under a hidden folder of the output folder, then moved into place together."""

    def __init__(self, storage: HadoopStorage, folder: str) -> None:
        self.storage = storage
        self.root = join(storage.absolute(folder), f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")

    def path(self, name: str) -> str:
        return join(self.root, name)

    def commit(self, moves: Sequence[Move]) -> None:
        """Move each staged (source, target, place): the folder itself, or with `place` each of its
        children to `target/place(child)`; several sources merge into one target, and a source
        that was never written adds nothing. Each target gets a `_SUCCESS` marker; then the
        staging folder goes."""
        for source, target, place in moves:
            if not self.storage.exists(source):
                continue
            if place is None:
                self.storage.merge(source, target)
            else:
                for child in self.storage.children(source):
                    self.storage.merge(join(source, child), join(target, place(child)))
        for target in dict.fromkeys(target for _, target, _ in moves):
            self.storage.mkdirs(target)
            self.storage.write_text(join(target, "_SUCCESS"), "")
        self.storage.delete(self.root)

    def abort(self) -> None:
        self.storage.delete(self.root)
