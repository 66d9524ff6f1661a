"""A class-data archive (AppCDS) for the suite's JVMs: the classes a Spark session loads, mapped
from one file instead of read from Spark's jars and verified again by every JVM the suite starts
(its session and each job it runs as a process). Measured: a local session's start and first job
from about 6 s to under 4 s. Made once per Java, pyspark and checkout, in `.cache/jvm`; a JVM whose
class path differs (a job given more jars) starts without it, silently."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""No word from the JVM when the archive does not fit it: the jobs' stderr stays theirs."""
WARM = """
import os, sys, tempfile
os.environ["PYSPARK_PYTHON"] = sys.executable
import pyarrow as pa
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
with tempfile.TemporaryDirectory() as folder:
    lines = spark.createDataFrame([("a", 1), ("b", 2)], "value string, n long")
    lines.write.partitionBy("n").option("compression", "gzip").text(folder + "/text")
    read = spark.read.text(folder + "/text").mapInArrow(lambda batches: batches, "value string, n int")
    read.groupBy("n").agg(F.count("*")).write.parquet(folder + "/parquet")
    spark.read.parquet(folder + "/parquet").count()
spark.stop()
"""
"""A session's usual work (text and Parquet written and read, Arrow batches through Python, a
shuffle), so the archive holds the classes the jobs load."""


def options(root: Path, base: str) -> str:
    """`base` with the archive's options, the archive made first if it is not there; `base` alone
    where pyspark is not installed or the archive cannot be made."""
    try:
        import pyspark
    except ImportError:
        return base
    java = (
        shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if "JAVA_HOME" in os.environ else None
    )
    java = java or shutil.which("java")
    if java is None:
        return base
    real = Path(java).resolve()
    key = hashlib.sha256(f"{real}:{real.stat().st_mtime_ns}:{pyspark.__version__}:{base}".encode()).hexdigest()[:16]
    folder = root / ".cache" / "jvm"
    archive = folder / f"spark-{pyspark.__version__}-{key}.jsa"
    if not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not archive.exists():
                _make(archive, base)
    return f"{base} -XX:SharedArchiveFile={archive} {QUIET}" if archive.exists() else base


def _make(archive: Path, base: str) -> None:
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{base} -XX:ArchiveClassesAtExit={partial} {QUIET}"}
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        done = subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True, timeout=300, check=False)
        if done.returncode == 0 and partial.exists():
            os.replace(partial, archive)
    partial.unlink(missing_ok=True)
