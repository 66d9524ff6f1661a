"""The core's `Storage` on Hadoop's FileSystem, from the driver: whatever file system a path names
(local, HDFS, S3A, ...), as the Spark session is configured to reach it."""

from __future__ import annotations

import functools
import os
import re
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from pyspark.sql import DataFrame, SparkSession

from events_manifest._jobs.face import (
    FILE,
    FOLDER,
    Listing,
    LocalStorage,
    Storage,
    being_copied,
    hidden,
    join,
    local_path,
    no_slash,
    unread,
)

S3_SCHEMES = ("s3a", "s3", "s3n")
"""The schemes Hadoop's S3 connectors serve (S3A; EMRFS on EMR)."""


QUALIFIED_KEPT = 4096
"""How many paths a storage keeps qualified (`HadoopStorage.qualify`) before it starts again."""

_GLOB = re.compile(r"([\\\[\]{}*?])")


def literal(path: str) -> str:
    """A path Spark's reader takes as itself: its glob characters escaped."""
    return _GLOB.sub(r"\\\1", path)


def hadoop_path(uri: str) -> str:
    """A file's URI (`DataFrame.inputFiles`: `file:///a%20b`) as Hadoop names its path (`file:/a b`)."""
    parts = urlsplit(uri)
    return (
        f"{parts.scheme}://{parts.netloc}{unquote(parts.path)}"
        if parts.netloc
        else f"{parts.scheme}:{unquote(parts.path)}"
    )


class HadoopStorage(Storage):
    """Hadoop FileSystem operations for the driver of a Spark session."""

    def __init__(self, spark: SparkSession) -> None:
        jvm: Any = spark._jvm
        self.spark = spark
        self._jvm = jvm
        self._conf: Any = spark._jsc.hadoopConfiguration()
        self._path: Any = self._class("org.apache.hadoop.fs.Path")
        self._uri: Any = self._class("java.net.URI")
        self._local = LocalStorage()
        self._systems: dict[str, Any] = {}
        self._qualified: dict[str, str] = {}

    def _class(self, name: str) -> Any:
        """A JVM class by its full name, in one lookup: py4j resolves a dotted name a part at a time, and
        each part that is not a class costs the JVM a search of every jar (about 0.3 ms)."""
        return getattr(self._jvm, name)

    def _fs(self, path: str) -> tuple[Any, Any]:
        """The file system of a path, and the path as Hadoop's. Each file system is taken once, by its
        scheme and authority, as Hadoop's own cache keeps them (one object a storage, also where that
        cache is turned off), not asked for again through py4j at each of a run's hundreds of calls."""
        absolute = self.absolute(path)
        parts = urlsplit(absolute)
        p = self._path(absolute)
        key = f"{parts.scheme}://{parts.netloc}" if parts.scheme else ""
        fs = self._systems.get(key)
        if fs is None:
            fs = self._systems[key] = p.getFileSystem(self._conf)
        return fs, p

    def absolute(self, path: str) -> str:
        """A relative path made absolute against this process's current folder when the default file
        system is the local one (Hadoop's own working folder is the one the JVM started in, which a
        program that changed folder since no longer is); any other path as it is."""
        if path.startswith("/") or urlsplit(path).scheme or not self._local_default:
            return path
        return os.path.join(os.getcwd(), path)

    @functools.cached_property
    def _local_default(self) -> bool:
        return str(self._class("org.apache.hadoop.fs.FileSystem").get(self._conf).getScheme()) == "file"

    def qualify(self, path: str) -> str:
        """The path as its file system names it in full, worked out once a path (it reads no file)."""
        absolute = self.absolute(path)
        qualified = self._qualified.get(absolute)
        if qualified is None:
            if len(self._qualified) >= QUALIFIED_KEPT:  # a stream's storage lives for days
                self._qualified.clear()
            fs, p = self._fs(absolute)
            qualified = self._qualified[absolute] = no_slash(str(fs.makeQualified(p).toString()))
        return qualified

    def kind(self, path: str) -> str | None:
        qualified = self.qualify(path)
        if local_path(qualified) is not None:  # the OS tells a FIFO or a device from a file
            return self._local.kind(qualified)
        fs, p = self._fs(qualified)
        if not fs.exists(p):
            return None
        status = fs.getFileStatus(p)
        return FOLDER if status.isDirectory() else FILE if status.isFile() else "special file"

    def matches(self, path: str) -> bool:
        fs, p = self._fs(path)
        found = fs.globStatus(p)
        return found is not None and len(found) > 0

    def listing(self, paths: Sequence[str]) -> Listing:
        """The files Spark's text reader takes from these paths (its own rules for hidden files,
        subfolders and globs), with their sizes."""
        return self.files_of(self.spark.read.text([self.absolute(path) for path in paths]), roots=paths)

    def files_of(self, frame: DataFrame, roots: Sequence[str] = ()) -> Listing:
        """The files a DataFrame read from files reads (as its reader listed them), with their sizes,
        and what their folders hold that the reader leaves out (`unread`: files still being
        copied, sub-folders): each folder listed once (on S3 a LIST request a thousand files); and
        so the folders it was read from (`roots`, or those a glob of them matches) where it read no
        file directly (a copy whose first file is not there yet, files only in sub-folders)."""
        names = sorted(frame.inputFiles())  # URIs: `part%201.tsv` names `part 1.tsv`
        by_folder: dict[str, list[str]] = {}
        for name in names:
            by_folder.setdefault(name.rsplit("/", 1)[0] + "/", []).append(name)
        found: dict[str, tuple[str, int]] = {}
        entries: dict[str, int | None] = {}
        for folder, together in by_folder.items():
            at = self._path(self._uri(folder))
            fs = at.getFileSystem(self._conf)
            listed = self._entries(fs, fs.makeQualified(at))
            entries.update(listed)
            for name in together:
                qualified = hadoop_path(name)
                size = listed.get(qualified)
                if size is None:  # gone from its folder since Spark listed it
                    size = int(fs.getFileStatus(self._path(self._uri(name))).getLen())
                found[name] = (qualified, size)
        folders = {name.rsplit("/", 1)[0] for name in entries}
        named: list[str] = []
        for root in map(self.qualify, roots):
            if root in folders:
                named.append(root)
                continue
            fs, p = self._fs(root)
            for status in fs.globStatus(p) or []:  # a plain path matches itself
                path = no_slash(str(status.getPath().toString()))
                if status.isDirectory():
                    named.append(path)
                    if path not in folders:
                        entries.update(self._entries(fs, status.getPath()))
                else:  # a file named takes itself; a glob's, its folder (a copy's file may match it once done)
                    named.append(path if path == root else path.rsplit("/", 1)[0])
        read = (name for name, _ in found.values())
        copying, nested = unread(entries, read, named if roots else None)
        return Listing(tuple(found[name] for name in names), copying=copying, nested=nested)

    def entries(self, path: str) -> dict[str, int | None]:
        """What is directly in a folder (`_entries`), nothing if it is not one."""
        fs, p = self._fs(path)
        return self._entries(fs, fs.makeQualified(p)) if fs.isDirectory(p) else {}

    def _entries(self, fs: Any, p: Any) -> dict[str, int | None]:
        """What is directly in the folder `p` (qualified), by qualified path: each file's size, None
        for a sub-folder; one listing."""
        local = local_path(no_slash(str(p.toString())))
        if local is not None:  # the OS lists a folder of thousands in a blink, py4j a file at a time
            return {
                no_slash(f"file:{entry.path}"): entry.stat().st_size if entry.is_file() else None
                for entry in os.scandir(local)
                if entry.is_file() or entry.is_dir()
            }
        return self._listed(fs, p)

    def _listed(self, fs: Any, p: Any) -> dict[str, int | None]:
        """`_entries` as Hadoop's listing of the folder gives them, locally too (it refuses a name
        its paths cannot hold, which `_spark.failures` names)."""
        return {
            no_slash(str(status.getPath().toString())): int(status.getLen()) if status.isFile() else None
            for status in fs.listStatus(p)
        }

    def folder_files(self, *paths: str) -> Listing:
        """The files directly in these folders that a read of them takes, whatever their names
        (Hadoop's hidden `_*` and `.*` left out), with their sizes; what they hold apart (`unread`:
        files still being copied, sub-folders); the folders too (`Listing.folders`) when none holds a
        sub-folder."""
        entries: dict[str, int | None] = {}
        folders: list[str] = []
        for path in paths:
            fs, p = self._fs(path)
            if fs.exists(p):
                entries.update(self._listed(fs, p))
                folders.append(no_slash(str(fs.makeQualified(p).toString())))
        files = sorted(
            (name, size)
            for name, size in entries.items()
            if size is not None and not hidden(name) and not being_copied(name)
        )
        # a sub-folder: Spark's read of the folder takes a `k=v` one for a partition
        whole = len(folders) == len(paths) and None not in entries.values()
        copying, nested = unread(entries, (name for name, _ in files))
        return Listing(tuple(files), folders=tuple(folders) if whole else (), copying=copying, nested=nested)

    def frame_of(self, listing: Listing) -> DataFrame:
        """A DataFrame of a listing's files (column `value`: text, a line a row; or Parquet records):
        read as their folders where Spark's listing of them takes the same files (a listing each:
        named one by one, Spark looks for each file on its own, on S3 two or three requests a file),
        else by their names."""
        names = [name for name, _ in listing.files]

        def read(paths: Sequence[str]) -> DataFrame:
            literals = [literal(path) for path in paths]
            return self.spark.read.parquet(*literals) if listing.records else self.spark.read.text(literals)

        if listing.folders:
            whole = read(listing.folders)
            if sorted(hadoop_path(uri) for uri in whole.inputFiles()) == sorted(names):
                return whole
        return read(names)

    def modified_times(self, path: str) -> dict[str, int]:
        """Each file directly in a folder, by its qualified path: its modification time in
        milliseconds since the epoch (none when the folder does not exist)."""
        local = local_path(self.qualify(path))
        if local is not None:  # the OS lists a folder of thousands in a blink, py4j a file at a time
            try:
                entries = list(os.scandir(local))
            except (FileNotFoundError, NotADirectoryError):
                return {}
            return {
                no_slash(f"file:{entry.path}"): entry.stat().st_mtime_ns // 1_000_000
                for entry in entries
                if entry.is_file()
            }
        fs, p = self._fs(path)
        if not fs.exists(p):
            return {}
        return {
            no_slash(str(status.getPath().toString())): int(status.getModificationTime())
            for status in fs.listStatus(p)
            if status.isFile()
        }

    def working_folders(self) -> list[str]:
        fs, p = self._fs(self.absolute("."))
        folders, at = [], fs.makeQualified(p)
        while at is not None:
            folders.append(no_slash(str(at.toString())))
            at = at.getParent()
        return folders

    def create_new(self, path: str, text: str) -> bool:
        """Locally an exclusive create of the OS; on S3 a conditional write (`If-None-Match: *`,
        through the AWS SDK: Hadoop's S3 connectors cannot ask for one); elsewhere the file
        system's create without overwrite (atomic on HDFS)."""
        qualified = self.qualify(path)
        if local_path(qualified) is not None:
            return self._local.create_new(qualified, text)
        parts = urlsplit(qualified)
        if parts.scheme in S3_SCHEMES:
            return self._s3_create_new(parts.netloc, parts.path.lstrip("/"), text)
        fs, p = self._fs(qualified)
        fs.mkdirs(p.getParent())
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

    def _s3_create_new(self, bucket: str, key: str, text: str) -> bool:
        import botocore.exceptions

        try:
            self._s3.put_object(Bucket=bucket, Key=key, Body=text.encode(), IfNoneMatch="*")
        except botocore.exceptions.ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        return True

    @functools.cached_property
    def _s3(self) -> Any:
        """An S3 client reaching what the session's S3A settings name (endpoint, path style, static
        keys), else the AWS default chain (EMRFS's `s3://` on EMR)."""
        from botocore.config import Config

        from events_manifest._jobs.face import boto3_session, default_region

        get = self._conf.get
        endpoint = get("fs.s3a.endpoint") or None
        if endpoint is not None and "://" not in endpoint:
            secure = str(get("fs.s3a.connection.ssl.enabled") or "true").lower() == "true"
            endpoint = f"{'https' if secure else 'http'}://{endpoint}"
        style = "path" if str(get("fs.s3a.path.style.access") or "").lower() == "true" else "auto"
        keys = {}
        if get("fs.s3a.access.key") and get("fs.s3a.secret.key"):
            keys = {"aws_access_key_id": get("fs.s3a.access.key"), "aws_secret_access_key": get("fs.s3a.secret.key")}
        region = get("fs.s3a.endpoint.region") or default_region() or "us-east-1"
        config = Config(s3={"addressing_style": style}, retries={"mode": "standard"})  # type: ignore[arg-type]
        return boto3_session().client("s3", region_name=region, endpoint_url=endpoint, config=config, **keys)

    def children(self, path: str) -> list[str]:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def subfolders(self, path: str) -> list[str]:
        """One listing, whatever the number of folders (a request per folder on S3 otherwise)."""
        fs, p = self._fs(path)
        if not fs.exists(p):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p) if status.isDirectory())

    def delete(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.delete(p, True)

    def files(self, path: str) -> list[str]:
        qualified = self.qualify(path)
        if local_path(qualified) is not None:
            return self._local.files(qualified)
        fs, p = self._fs(qualified)
        if not fs.exists(p):
            return []
        root = str(fs.makeQualified(p).toString()).rstrip("/") + "/"
        found, listed = [], fs.listFiles(p, True)
        while listed.hasNext():
            found.append(str(listed.next().getPath().toString()).removeprefix(root))
        return sorted(found)

    def move_file(self, source: str, target: str) -> None:
        qualified = self.qualify(target)
        if local_path(qualified) is not None:
            self._local.move_file(self.qualify(source), qualified)
        else:
            super().move_file(source, qualified)

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
            moved = self._class("org.apache.hadoop.fs.FileUtil").copy(fs, src, target_fs, dst, True, self._conf)
        if not moved:
            raise OSError(f"could not move {source} to {target}")

    def write_text(self, path: str, text: str) -> None:
        """Through a temporary file beside it and a rename (a delete first where the file system's
        rename does not replace)."""
        qualified = self.qualify(path)
        if local_path(qualified) is not None:
            self._local.write_text(qualified, text)
            return
        folder, name = qualified.rsplit("/", 1)
        temporary = join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        fs, p = self._fs(temporary)
        stream = fs.create(p, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        _, target = self._fs(qualified)
        if fs.exists(target):
            fs.delete(target, False)
        if not fs.rename(p, target):
            raise OSError(f"could not move {temporary} to {qualified}")

    def read_text(self, path: str) -> str:
        fs, p = self._fs(path)
        stream = fs.open(p)
        reader = self._class("java.io.BufferedReader")(self._class("java.io.InputStreamReader")(stream, "UTF-8"))
        try:
            return "\n".join(iter(reader.readLine, None))
        finally:
            reader.close()
