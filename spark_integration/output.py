"""The shred job's outputs (SPEC §5), staged and then moved into place through Hadoop's FileSystem,
so a failed run leaves no partial output and any Hadoop file system (local, HDFS, S3A) works.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
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


ATOMIC_KIND, SHREDDED_KIND, BAD_KIND = "atomic", "shredded", "bad"
NO_PARTITION = "_"
"""The partition values of atomic and bad lines, which have no schema."""


def output_lines(result: DataFrame, failure_tstamp: str) -> DataFrame:
    """Every line a run writes, from one pass over its result, for one partitioned write:
    `kind` (atomic, shredded or bad), the schema's `vendor`, `name`, `format`, `version` (for
    shredded lines) and `value`.

    `result` has, for kept events, `atomic`, `entities`, `synthetic`, `new_event_id`, `event_id`,
    `collector_tstamp`; for bad rows, `line` and `errors`; the other columns null.
    """
    duplicate = F.struct(
        *(F.lit(v).alias(k) for k, v in zip(PARTITIONS, DUPLICATE_CONTEXT, strict=True)),
        F.concat(F.lit('{"originalEventId":'), _quoted("event_id"), F.lit("}")).alias("data"),
    )
    entities = F.when(F.col("synthetic"), F.array_append("entities", duplicate)).otherwise(F.col("entities"))

    def schemaless(kind: str, value: Column) -> Column:  # shaped like an entity: no vendor, its kind as version
        blank = (F.lit("").alias(k) for k in PARTITIONS[:-1])
        return F.struct(*blank, F.lit(kind).alias("version"), value.alias("data"))

    lines = result.select(
        "new_event_id",
        "collector_tstamp",
        F.explode(
            F.concat(
                F.array(schemaless(ATOMIC_KIND, F.col("atomic")), schemaless(BAD_KIND, _bad_row(failure_tstamp))),
                F.coalesce(entities, F.array()),
            )
        ).alias("out"),
    ).select("new_event_id", "collector_tstamp", "out.*")
    lines = lines.filter(F.col("data").isNotNull())  # an event has an atomic line or a bad row, not both
    shredded = F.col("vendor") != ""  # an Iglu vendor is never empty
    return lines.select(
        F.when(shredded, F.lit(SHREDDED_KIND)).otherwise(F.col("version")).alias("kind"),
        *(F.when(shredded, F.col(k)).otherwise(F.lit(NO_PARTITION)).alias(k) for k in PARTITIONS),
        F.when(shredded, _shredded_line()).otherwise(F.col("data")).alias("value"),
    )


def _shredded_line() -> Column:
    """SPEC §5's line for one entity: its `data` byte for byte."""
    return F.concat(
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


def _bad_row(failure_tstamp: str) -> Column:
    """`{"line":...,"errors":[{"level":"error","message":...}],"failure_tstamp":...}`, null but for bad rows."""
    errors = F.transform("errors", lambda m: F.struct(F.lit("error").alias("level"), m.alias("message")))
    document = F.struct(
        F.make_valid_utf8("line").alias("line"), errors.alias("errors"), F.lit(failure_tstamp).alias("failure_tstamp")
    )
    return F.when(F.col("line").isNotNull(), F.to_json(document))


def write_outputs(lines: DataFrame, staging: Staging) -> str:
    """Write `output_lines` under the staging folder in one job; returns where."""
    path = staging.path("lines")
    lines.write.partitionBy("kind", *PARTITIONS).text(path)
    return path


def staged(path: str, kind: str) -> str:
    """Where the lines of one kind are under the staging folder (shredded: its vendor= folders)."""
    folder = join(path, f"kind={kind}")
    if kind == SHREDDED_KIND:
        return folder
    return join(folder, *(f"{k}={NO_PARTITION}" for k in PARTITIONS))


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
        """Rename within a file system; copy then delete across two."""
        fs, src = self._fs(source)
        target_fs, dst = self._fs(target)
        if fs.getUri().equals(target_fs.getUri()):
            moved = fs.rename(src, dst)
        else:
            moved = self._jvm.org.apache.hadoop.fs.FileUtil.copy(fs, src, target_fs, dst, True, self._conf)
        if not moved:
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
    """Outputs written under a hidden folder of the output folder, then moved into place together."""

    def __init__(self, storage: Storage, folder: str) -> None:
        self.storage = storage
        self.root = join(folder, f".staging-{uuid.uuid4().hex[:12]}")

    def path(self, name: str) -> str:
        return join(self.root, name)

    def commit(self, moves: Sequence[tuple[str, str, bool]]) -> None:
        """Move each staged (source, target, flatten): the folder itself, or with `flatten` its
        files into `target`; a source that was never written leaves `target` empty. Each target
        gets a `_SUCCESS` marker; then the staging folder goes."""
        for source, target, flatten in moves:
            written = self.storage.exists(source)
            if flatten or not written:
                self.storage.mkdirs(target)
            if written and flatten:
                for child in self.storage.children(source):
                    self.storage.move(join(source, child), join(target, child))
            elif written:
                self.storage.move(source, target)
            self.storage.write_text(join(target, "_SUCCESS"), "")
        self.storage.delete(self.root)

    def abort(self) -> None:
        self.storage.delete(self.root)


def summary_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, sort_keys=False) + "\n"
