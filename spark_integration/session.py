"""The Spark session of these jobs: a local one set up for one machine (UTC, loopback only, no UI,
Arrow batches), or the one spark-submit brings, with the user's settings standing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark import SparkConf
from pyspark.sql import SparkSession

JOB_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.python.worker.reuse": "true",
}
"""What the jobs need wherever they run, unless the user set it: timestamps read and written in
UTC, Arrow batches of the size the engine is tuned for."""
LOCAL_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
}
"""What a local session gets besides: one machine, loopback only, no UI."""
DEFAULTS = {**LOCAL_SETTINGS, **JOB_SETTINGS}


QUIET_LOG = Path(__file__).with_name("log4j2.properties")
"""Spark's log off on the console: the jobs say what went wrong in one line of their own."""


def submitted() -> bool:
    """Whether spark-submit started this process (its JVM, master and settings come first)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def local_session(
    master: str = "local[2]", app_name: str = "events-manifest", *, verbose: bool = False, **conf: str
) -> SparkSession:
    """The active session if there is one (a notebook), the one spark-submit brings, else a new
    local one.

    A new local session runs its Python workers on this interpreter (Spark would take `python3`
    from PATH, which is not a virtual environment's unless it is activated), unless the user chose
    one (`PYSPARK_PYTHON`, `spark.pyspark.python`); its log is silent (`QUIET_LOG`) unless
    `verbose`, which shows Spark's warnings. Under spark-submit the user's settings stand (master,
    network, resources, `spark.log.level`): only the `JOB_SETTINGS` the user did not set are added,
    and Spark's log is at WARN from the session's start unless `verbose`.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if submitted():
        given = SparkConf()  # what spark-submit was told (--conf, spark-defaults.conf)
        wanted = {**JOB_SETTINGS, **({} if verbose else {"spark.log.level": "WARN"}), **conf}
        settings = {key: value for key, value in wanted.items() if not given.contains(key)}
    else:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings = {**DEFAULTS, **conf}
        if not verbose:
            settings.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{QUIET_LOG}")
        builder = builder.master(master)
        if "PYSPARK_PYTHON" not in os.environ and "spark.pyspark.python" not in settings:
            os.environ["PYSPARK_PYTHON"] = sys.executable  # read by the SparkContext for its workers
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if verbose:
        spark.sparkContext.setLogLevel("WARN")
    return spark
