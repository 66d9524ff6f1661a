"""A local Spark session set up for these jobs: UTC, loopback only, no UI, Arrow batches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.python.worker.reuse": "true",
}


QUIET_LOG = Path(__file__).with_name("log4j2.properties")
"""Spark's log off on the console: the jobs say what went wrong in one line of their own."""


def local_session(
    master: str = "local[2]", app_name: str = "events-manifest", *, verbose: bool = False, **conf: str
) -> SparkSession:
    """The active session if there is one (spark-submit, a notebook), else a new local one.

    A new local session runs its Python workers on this interpreter (Spark would take `python3`
    from PATH, which is not a virtual environment's unless it is activated), unless the user chose
    one (`PYSPARK_PYTHON`, `spark.pyspark.python`); under spark-submit the user's settings stand.
    Its log is silent (`QUIET_LOG`) unless `verbose`, which shows Spark's warnings.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    settings = {**DEFAULTS, **conf}
    if not verbose:
        settings.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{QUIET_LOG}")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, which brings its own master
        builder = builder.master(master)
        if "PYSPARK_PYTHON" not in os.environ and "spark.pyspark.python" not in settings:
            os.environ["PYSPARK_PYTHON"] = sys.executable  # read by the SparkContext for its workers
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if verbose:
        spark.sparkContext.setLogLevel("WARN")
    return spark
