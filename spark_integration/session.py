"""The Spark session of these jobs: a local one set up for one machine (UTC, loopback only, no UI,
Arrow batches), or the one spark-submit brings, with the user's settings standing."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType

import pyspark
from pyspark import SparkConf
from pyspark.sql import SparkSession

from spark_integration._spark.api import check_line
from spark_integration._spark.daemon import QUIET

__all__ = [
    "local_session",
    "s3a_settings",
]

JOB_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.python.worker.reuse": "true",
    "spark.sql.maxConcurrentOutputFileWriters": "64",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
"""What the jobs need wherever they run, unless the user set it: timestamps read and written in
UTC, Arrow batches of the size the engine is tuned for, and a file open per output folder while
a task writes (up to 64, then Spark sorts the rest), where Spark would sort every row of a
partitioned write by its folder first: the shred job's outputs go to a dozen folders. And no
Python call site captured for each column function (Spark 4's DataFrame query context): the
jobs' columns are built by this library, so the site would name its code, never the user's, and
the captures cost a warm small run's driver a sixth of its CPU in calls to the JVM
(docs/development.md). A session the user started (a notebook's) keeps its own settings."""
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
LOCAL_DAEMON = {"spark.python.daemon.module": "spark_integration._spark.daemon"}
"""For a `local` master, whose Python workers run on this machine: Spark's daemon started so that
it and every worker import pyspark from the installed package, compiled once, instead of from
the zip of its sources Spark puts first on their path, which each process compiles again (about
half a CPU second a session). A cluster's workers keep Spark's own daemon."""


QUIET_LOG = Path(__file__).with_name("log4j2.properties")
"""Spark's log off on the console: the jobs say what went wrong in one line of their own."""
LOCAL_JAVA_OPTIONS = ("-XX:+UseParallelGC",)
"""A local session's JVM runs the throughput collector, not the JVM's default (G1): a batch job
waits for its whole run, not for a pause. Measured on the shred job's whole process (300k events,
`local[2]`): G1 cost its JVM 2 to 4 CPU seconds more a run, outside its pauses (0.3 s in all),
and the bare Spark job nothing (docs/benchmarks.md). Left out when the user chose a collector
(`collector_chosen`)."""
JAVA_OPTION_VARIABLES = (
    "SPARK_SUBMIT_OPTS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "PYSPARK_SUBMIT_ARGS",
)
"""The environment variables whose JVM options reach a local session's JVM besides its settings."""
_COLLECTOR = re.compile(r"-XX:\+Use\w*GC\b")


def collector_chosen(environ: Mapping[str, str], *options: str) -> bool:
    """Whether the user chose the JVM's collector in `options` or where a local session's JVM also
    reads options (`JAVA_OPTION_VARIABLES`, or the `spark-defaults.conf` spark-submit reads): the
    JVM refuses to start with two."""
    home = environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)  # as pyspark finds it
    defaults = Path(environ.get("SPARK_CONF_DIR") or Path(home, "conf"), "spark-defaults.conf")
    texts = [*options, *(environ.get(name, "") for name in JAVA_OPTION_VARIABLES)]
    texts += [defaults.read_text(errors="replace")] if defaults.is_file() else []
    return any(_COLLECTOR.search(text) for text in texts)


def driver_java_options(verbose: bool, settings: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> str:
    """A local session's `spark.driver.extraJavaOptions`, given its other `settings`:
    `LOCAL_JAVA_OPTIONS` unless the user chose a collector (there too, in
    `spark.driver.defaultJavaOptions`), and the quiet log (`QUIET_LOG`) unless `verbose`."""
    chosen = collector_chosen(environ, settings.get("spark.driver.defaultJavaOptions", ""))
    quiet = [] if verbose else [f"-Dlog4j2.configurationFile=file:{QUIET_LOG}"]
    return " ".join([*([] if chosen else LOCAL_JAVA_OPTIONS), *quiet])


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
    one (`PYSPARK_PYTHON`, `spark.pyspark.python`), and with a `local` master on the installed
    pyspark (`LOCAL_DAEMON`); its JVM gets `driver_java_options` unless the user set
    `spark.driver.extraJavaOptions`, so its log is silent (`QUIET_LOG`) unless `verbose`, which shows
    Spark's warnings. Under spark-submit the user's settings stand (master,
    network, resources, `spark.log.level`): only the `JOB_SETTINGS` the user did not set are added,
    and Spark's log is at WARN from the session's start unless `verbose`.
    Refused on a Spark outside the supported lines (`_spark.api.check_line`), before any JVM starts.
    """
    check_line()
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
        daemon = {**LOCAL_DAEMON, **({} if verbose else {f"spark.executorEnv.{QUIET}": "1"})}
        settings = {**DEFAULTS, **(daemon if master.startswith("local") else {}), **conf}
        if "spark.driver.extraJavaOptions" not in settings:  # the user's stand whole
            settings["spark.driver.extraJavaOptions"] = driver_java_options(verbose, settings)
        builder = builder.master(master)
        if "PYSPARK_PYTHON" not in os.environ and "spark.pyspark.python" not in settings:
            os.environ["PYSPARK_PYTHON"] = sys.executable  # read by the SparkContext for its workers
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = _started(builder, local=not submitted())
    if verbose:
        spark.sparkContext.setLogLevel("WARN")
    return spark


def _started(builder: SparkSession.Builder, *, local: bool) -> SparkSession:
    """A session started with Ctrl-C and SIGTERM held: recorded, then given to this process's
    handlers once it has started (a stop during a JVM's start, cut short, left that JVM running,
    unable to reach its driver; a SIGTERM was lost and the stream ran on). A `local` JVM then ignores
    SIGTERM, as pyspark has it ignore SIGINT, so that a stop sent to the whole process group
    (systemd, a terminal) reaches the driver alone, which stops gracefully and takes the JVM with it
    when it exits (the JVM ends when its stdin does). A start a held signal cut short (the JVM
    killed by SIGTERM, or pyspark's own SIGINT handler, set while the context starts) is a stop
    asked for: KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return builder.getOrCreate()
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    handlers = {number: signal.signal(number, hold) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _jvm_stderr() if local else contextlib.nullcontext():
            spark = builder.getOrCreate()
        jvm = spark.sparkContext._jvm
        if local and jvm is not None:
            jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("TERM"), jvm.sun.misc.SignalHandler.SIG_IGN)
    except BaseException as e:
        if held or isinstance(e, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    for signum in held:
        signal.raise_signal(signum)
    return spark


JVM_NOTICE = b"WARNING: Using incubator modules: "
"""What the JVM says as it starts when Spark 4 has it add `jdk.incubator.vector`: a line above every
command's own, which no JVM option silences."""


@contextlib.contextmanager
def _jvm_stderr() -> Iterator[None]:
    """While a local JVM launches, this process's stderr a pipe: the JVM's for its life, which a
    thread copies to the real one, less `JVM_NOTICE`. This process writes to its own again once
    the JVM is launched."""
    read, write = os.pipe()
    stderr = os.dup(2)
    threading.Thread(target=_copy, args=(read, stderr), name="jvm-stderr", daemon=True).start()
    sys.stderr.flush()
    os.dup2(write, 2)
    os.close(write)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(stderr, 2)


def _copy(read: int, stderr: int) -> None:
    """The JVM's stderr to this process's, line by line, but its notice of incubator modules."""
    with open(read, "rb") as pipe, open(stderr, "wb", closefd=False) as out:
        for line in pipe:
            if not line.startswith(JVM_NOTICE):
                out.write(line)
                out.flush()


S3A_TIMES = {
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.connection.establish.timeout": "5000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.multipart.purge.age": "86400",
    "fs.s3a.connection.request.timeout": "0",
    "fs.s3a.connection.ttl": "300000",
    "fs.s3a.connection.idle.time": "60000",
    "fs.s3a.connection.acquisition.timeout": "60000",
}
"""The S3A connector's time settings as plain numbers (seconds or milliseconds): pyspark 4 ships
Hadoop 3.5's defaults, written with units (`60s`), which the 3.3 connector (`hadoop-aws` 3.3.x)
cannot read."""


def s3a_settings(
    endpoint: str | None = None, *, access_key: str | None = None, secret_key: str | None = None
) -> dict[str, str]:
    """Spark settings for `s3a://` paths with the `hadoop-aws` 3.3 connector (its jars on the
    classpath: `spark.jars`, or `--jars` of spark-submit): its time settings as numbers, and, for
    an S3-compatible server at `endpoint` (`http://127.0.0.1:PORT`), path-style access and static
    keys. Without them the connector takes AWS's default credential chain."""
    hadoop = dict(S3A_TIMES)
    if endpoint is not None:
        hadoop.update(
            {
                "fs.s3a.endpoint": endpoint,
                "fs.s3a.path.style.access": "true",
                "fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https:")).lower(),
            }
        )
    if access_key is not None and secret_key is not None:
        hadoop.update(
            {
                "fs.s3a.access.key": access_key,
                "fs.s3a.secret.key": secret_key,
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            }
        )
    return {f"spark.hadoop.{key}": value for key, value in hadoop.items()}
