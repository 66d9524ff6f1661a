"""The shred job's outputs (docs/shred-job.md), staged and then moved into place through Hadoop's FileSystem,
so a failed run leaves no partial output and any Hadoop file system (local, HDFS, S3A) works.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from events_manifest.snowplow.shred_output import (
    ATOMIC_KIND,
    BAD_KIND,
    NO_TYPE,
    PARTITIONS,
    SCHEMA_PARTS,
    SHREDDED_KIND,
)

ATOMIC = "atomic-events"
SHREDDED = "shredded-types"
SUMMARY = "_summary.json"
RUN_MARKER = "_run.json"
"""What earlier versions of the job wrote while a run was under way: still the job's own when found."""


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


class Storage:
    """Hadoop FileSystem operations on the driver, for whatever file system a path names."""

    def __init__(self, spark: SparkSession) -> None:
        jvm: Any = spark._jvm
        self._jvm = jvm
        self._conf: Any = spark._jsc.hadoopConfiguration()
        self._path: Any = jvm.org.apache.hadoop.fs.Path  # looked up once: py4j asks the JVM a name at a time

    def _fs(self, path: str) -> tuple[Any, Any]:
        p = self._path(path)
        return p.getFileSystem(self._conf), p

    def qualify(self, path: str) -> str:
        """The path with its file system and absolute (`file:/abs/out`), without a trailing slash."""
        fs, p = self._fs(path)
        return _no_slash(str(fs.makeQualified(p).toString()))

    def matches(self, path: str) -> bool:
        """Whether a path (or glob) names at least one file or folder."""
        fs, p = self._fs(path)
        found = fs.globStatus(p)
        return found is not None and len(found) > 0

    def working_folders(self) -> list[str]:
        """The default file system's working folder (the current folder, locally) and its ancestors."""
        fs, p = self._fs(".")
        folders, at = [], fs.makeQualified(p)
        while at is not None:
            folders.append(_no_slash(str(at.toString())))
            at = at.getParent()
        return folders

    def create_new(self, path: str, text: str) -> bool:
        """Create a file that must not exist yet, atomically; False if it exists. Locally an
        exclusive create of the OS; elsewhere the file system's create without overwrite (atomic
        on HDFS; object stores have no such guarantee)."""
        fs, p = self._fs(path)
        fs.mkdirs(p.getParent())
        if str(fs.getScheme()) == "file":
            try:
                handle = os.open(str(p.toUri().getPath()), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            return True
        try:
            stream = fs.create(p, False)
        except Exception as e:  # py4j's error for FileAlreadyExistsException
            if "FileAlreadyExistsException" in str(e):
                return False
            raise
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return True

    def exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def children(self, path: str) -> list[str]:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def delete(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.delete(p, True)

    def mkdirs(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.mkdirs(p)

    def move(self, source: str, target: str) -> None:
        """Rename within a file system; copy then delete across two. Makes the target's folder."""
        fs, src = self._fs(source)
        target_fs, dst = self._fs(target)
        target_fs.mkdirs(dst.getParent())
        if fs.equals(target_fs):  # Hadoop's cache holds one instance per file system
            moved = fs.rename(src, dst)
        else:
            moved = self._jvm.org.apache.hadoop.fs.FileUtil.copy(fs, src, target_fs, dst, True, self._conf)
        if not moved:
            raise OSError(f"could not move {source} to {target}")

    def _is_folder(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.getFileStatus(p).isDirectory())

    def merge(self, source: str, target: str) -> None:
        """`move`, but a folder whose target exists already is merged into it, child by child."""
        if self.exists(target) and self._is_folder(source):
            for child in self.children(source):
                self.merge(join(source, child), join(target, child))
        else:
            self.move(source, target)

    def write_text(self, path: str, text: str) -> None:
        fs, p = self._fs(path)
        stream = fs.create(p, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def read_text(self, path: str) -> str:
        fs, p = self._fs(path)
        stream = fs.open(p)
        reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(stream, "UTF-8"))
        try:
            return "\n".join(iter(reader.readLine, None))
        finally:
            reader.close()


def _no_slash(path: str) -> str:
    return path if path.endswith(":/") else path.rstrip("/")


def join(folder: str, *names: str) -> str:
    return "/".join([folder.rstrip("/"), *names])


class Staging:
    """Outputs written under a hidden folder of the output folder, then moved into place together."""

    def __init__(self, storage: Storage, folder: str) -> None:
        self.storage = storage
        self.root = join(folder, f".staging-{uuid.uuid4().hex[:12]}")

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
