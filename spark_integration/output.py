"""The shred job's outputs (SPEC §5), staged and then moved into place through Hadoop's FileSystem,
so a failed run leaves no partial output and any Hadoop file system (local, HDFS, S3A) works.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

ATOMIC = "atomic-events"
SHREDDED = "shredded-types"
SUMMARY = "_summary.json"
RUN_MARKER = "_run.json"
"""Written before the first manifest put, removed when the run has finished: its etl time."""
DUPLICATE_CONTEXT = ("com.snowplowanalytics.snowplow", "duplicate", "jsonschema", "1-0-0")
PARTITIONS = ["vendor", "name", "format", "version"]


def _quoted(column: str | Column) -> Column:
    """A value known to need no JSON escaping (validated ids, timestamps, Iglu parts), in quotes."""
    return F.concat(F.lit('"'), column, F.lit('"'))


def shredded_lines(events: DataFrame) -> DataFrame:
    """One JSON line per entity of each event, with the partition columns of its schema.

    `events` has `new_event_id`, `event_id`, `collector_tstamp`, `entities` and `synthetic`.
    """
    duplicate = F.struct(
        *(F.lit(v).alias(k) for k, v in zip(PARTITIONS, DUPLICATE_CONTEXT, strict=True)),
        F.concat(F.lit('{"originalEventId":'), _quoted("event_id"), F.lit("}")).alias("data"),
    )
    entities = F.when(F.col("synthetic"), F.array_append("entities", duplicate)).otherwise(F.col("entities"))
    exploded = events.select("new_event_id", "collector_tstamp", F.explode(entities).alias("e")).select(
        "new_event_id", "collector_tstamp", "e.*"
    )
    line = F.concat(
        F.lit('{"schema":{"vendor":'),
        _quoted("vendor"),
        F.lit(',"name":'),
        _quoted("name"),
        F.lit(',"format":'),
        _quoted("format"),
        F.lit(',"version":'),
        _quoted("version"),
        F.lit('},"data":'),
        F.col("data"),
        F.lit(',"hierarchy":{"rootId":'),
        _quoted("new_event_id"),
        F.lit(',"rootTstamp":'),
        _quoted("collector_tstamp"),
        F.lit(',"refRoot":"events","refTree":["events",'),
        _quoted("name"),
        F.lit('],"refParent":"events"}}'),
    )
    return exploded.select(*PARTITIONS, line.alias("value"))


def bad_rows(rows: DataFrame, failure_tstamp: str) -> DataFrame:
    """`{"line":...,"errors":[{"level":"error","message":...}],"failure_tstamp":...}` per bad line."""
    errors = F.transform("errors", lambda m: F.struct(F.lit("error").alias("level"), m.alias("message")))
    document = F.struct(
        F.make_valid_utf8("line").alias("line"), errors.alias("errors"), F.lit(failure_tstamp).alias("failure_tstamp")
    )
    return rows.select(F.to_json(document).alias("value"))


class Storage:
    """Hadoop FileSystem operations on the driver, for whatever file system a path names."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark._jvm
        self._conf: Any = spark._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self._conf), p

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
        fs, src = self._fs(source)
        _, dst = self._fs(target)
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {target}")

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


def join(folder: str, *names: str) -> str:
    return "/".join([folder.rstrip("/"), *names])


class Staging:
    """Outputs written under a hidden folder and moved into place together by `commit`."""

    def __init__(self, storage: Storage, folder: str) -> None:
        self.storage = storage
        self.folder = folder
        self.root = join(folder, f".staging-{uuid.uuid4().hex[:12]}")
        self.staged: list[tuple[str, bool]] = []

    def path(self, name: str, *, flatten: bool = False) -> str:
        """Where to write output `name`; with `flatten`, its files land directly in the folder."""
        self.staged.append((name, flatten))
        return join(self.root, name)

    def commit(self) -> None:
        for name, flatten in self.staged:
            source = join(self.root, name)
            if not self.storage.exists(source):
                continue
            if flatten:
                for child in self.storage.children(source):
                    self.storage.move(join(source, child), join(self.folder, child))
            else:
                self.storage.move(source, join(self.folder, name))
        self.storage.delete(self.root)

    def abort(self) -> None:
        self.storage.delete(self.root)


def summary_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, sort_keys=False) + "\n"
