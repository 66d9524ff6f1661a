"""The JVM's share of the shred job, piece by piece, side by side in one session.

    python benchmarks/shred_jvm.py --events 300000 --rounds 2

Each piece runs to Spark's `noop` sink or writes, alternately forwards and backwards after a
warm-up of each (see `shred_ab.alternate`); prints wall and CPU seconds (the JVM and its Python
workers), then medians:

    read              the input's lines
    keyed             + each line's event id key and the broadcast join with the shared ids
    to_python         every line sent to Python, nothing back
    and_back          every line sent to Python and back
    write_unparted    the job's output rows (cached, no manifest), written unpartitioned
    write_kind        ... partitioned by kind only
    write_parted      ... partitioned by kind and schema, as the job writes them
    write_concurrent  ... the same with concurrent writers and no sort
    write_no_crc      ... the same without Hadoop's local checksum files
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT.parent), str(ROOT)]

import shred_ab  # noqa: E402

from events_manifest._snowplow import shred_output  # noqa: E402
from spark_integration._shred import plan  # noqa: E402
from spark_integration._spark import enriched  # noqa: E402
from spark_integration._spark.scan import scan_batch  # noqa: E402


def pieces(spark, source: str, target: str) -> dict[str, Callable[[], None]]:  # type: ignore[no-untyped-def]
    lines = enriched.load_enriched(spark, source)  # listed once, as the job does
    scan = scan_batch(lines)
    assert scan.etl_time is not None
    rows = plan.output_lines(lines, scan.etl_time, None, "T", shared_keys=scan.shared_keys)
    rows = rows.filter(F.col("value").isNotNull()).persist(StorageLevel.MEMORY_ONLY)
    rows.count()
    text = lines.select("line")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()

    def noop(frame: DataFrame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def python(back: bool) -> None:
        def send(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                yield batch if back else batch.slice(0, 0)

        noop(text.mapInArrow(send, "line string"))

    def write(*partitions: str) -> None:
        rows.select(*partitions, "value").write.partitionBy(*partitions).mode("overwrite").text(target)

    def with_conf(conf: dict[str, str], run: Callable[[], None]) -> Callable[[], None]:
        def configured() -> None:
            for key, value in conf.items():
                spark.conf.set(key, value)
            try:
                run()
            finally:
                for key in conf:
                    spark.conf.unset(key)

        return configured

    def without_crc() -> None:
        hadoop.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        hadoop.set("fs.file.impl.disable.cache", "true")
        try:
            write(*shred_output.PARTITIONS)
        finally:
            hadoop.unset("fs.file.impl")
            hadoop.unset("fs.file.impl.disable.cache")

    concurrent = {"spark.sql.optimizer.plannedWrite.enabled": "false", "spark.sql.maxConcurrentOutputFileWriters": "64"}
    return {
        "read": lambda: noop(text),
        "keyed": lambda: noop(enriched.with_keys(text, scan.shared_keys, among=False)),
        "to_python": lambda: python(back=False),
        "and_back": lambda: python(back=True),
        "write_unparted": lambda: write(),
        "write_kind": lambda: write("kind"),
        "write_parted": lambda: write(*shred_output.PARTITIONS),
        "write_concurrent": with_conf(concurrent, lambda: write(*shred_output.PARTITIONS)),
        "write_no_crc": without_crc,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    def runner(spark, work: Path) -> tuple[Callable[[str], None], list[str]]:  # type: ignore[no-untyped-def]
        runs = pieces(spark, str(work / "in"), str(work / "out"))
        return lambda name: runs[name](), list(runs)

    shred_ab.measure("shred-jvm-", args.events, args.rounds, "piece", runner)


if __name__ == "__main__":
    main()
