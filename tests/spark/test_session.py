"""The local session's setup: its Python workers on the installed pyspark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_integration._spark.daemon import PRELOADED, _zipped_in_installed_pyspark, preload, without_threads
from spark_integration.session import driver_java_options

pytestmark = pytest.mark.every_line


def test_a_local_session_s_workers_import_the_installed_pyspark_not_the_zip_of_its_sources(spark: Any) -> None:
    import pyspark

    def where(_: Iterator[Any]) -> Iterator[str]:
        import pyspark

        yield pyspark.__file__ or ""

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect() == [pyspark.__file__]


def test_a_local_session_captures_no_python_call_site_for_each_column_function(spark: Any) -> None:
    """The jobs build their own columns: Spark 4's capture of the Python caller around each column
    function (calls to the JVM each time) is off (`JOB_SETTINGS`); Spark 3.5 has none to turn off."""
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    if not spark.version.startswith("3."):
        from pyspark.errors.utils import is_debugging_enabled

        assert not is_debugging_enabled()


def test_a_local_session_s_jvm_keeps_the_collector_its_user_chose(spark: Any) -> None:
    """The suite chooses the serial collector (`SPARK_SUBMIT_OPTS`, tests/jvm_archive.py): the session
    starts (the JVM refuses two collectors) and runs that one, not `LOCAL_JAVA_OPTIONS`'."""
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    collectors = {bean.getName() for bean in management.getGarbageCollectorMXBeans()}
    assert collectors == {"Copy", "MarkSweepCompact"}


def test_a_local_session_s_jvm_gets_the_throughput_collector_unless_one_was_chosen(tmp_path: Path) -> None:
    unset = {"SPARK_CONF_DIR": str(tmp_path)}
    assert driver_java_options(True, {}, unset) == "-XX:+UseParallelGC"
    assert driver_java_options(False, {}, unset).split()[0] == "-XX:+UseParallelGC"
    assert "log4j2.configurationFile" in driver_java_options(False, {}, unset)
    assert driver_java_options(True, {"spark.driver.defaultJavaOptions": "-XX:+UseG1GC"}, unset) == ""
    chosen = [
        {"JAVA_TOOL_OPTIONS": "-Xmx8g -XX:+UseG1GC"},
        {"SPARK_SUBMIT_OPTS": "-XX:+UseZGC"},
        {"PYSPARK_SUBMIT_ARGS": "--driver-java-options -XX:+UseSerialGC pyspark-shell"},
    ]
    for environ in chosen:
        assert driver_java_options(True, {}, {**unset, **environ}) == "", environ
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.defaultJavaOptions -XX:+UseShenandoahGC\n")
    assert driver_java_options(True, {}, unset) == ""


def test_only_the_zips_inside_an_installed_pyspark_go_last(tmp_path: Path) -> None:
    installed = tmp_path / "site-packages" / "pyspark"
    (installed / "python" / "lib").mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    distribution = tmp_path / "spark-4" / "python" / "lib"
    distribution.mkdir(parents=True)
    assert _zipped_in_installed_pyspark(str(installed / "python" / "lib" / "pyspark.zip"))
    assert _zipped_in_installed_pyspark(str(installed / "python" / "lib" / "py4j-0.10.9.9-src.zip"))
    assert not _zipped_in_installed_pyspark(str(distribution / "pyspark.zip")), "SPARK_HOME's own: kept first"
    assert not _zipped_in_installed_pyspark(str(installed.parent)), "not a zip"


def test_a_local_session_s_daemon_forks_its_workers_with_the_engines_imported_and_no_thread(spark: Any) -> None:
    """The workers' parent, Spark's daemon, has loaded pyarrow (its native library is mapped) and
    runs a single thread: a process with threads must not fork. A worker starts with the engines'
    objects frozen (`freeze`), the objects of its own task not: the modules behind the faces too,
    which a face imports at a name's first use."""

    def daemon(_: Iterator[Any]) -> Iterator[tuple[str, int, bool, tuple[bool, ...]]]:
        import gc
        import os
        import sys

        import pyarrow

        engine = sys.modules["events_manifest._transformer.parse_decide"]

        parent = f"/proc/{os.getppid()}"
        with open(f"{parent}/cmdline", "rb") as cmdline, open(f"{parent}/maps") as maps:
            own = [object()]
            walked = {id(o) for o in gc.get_objects()}
            yield (
                cmdline.read().decode(),
                len(os.listdir(f"{parent}/task")),
                "libarrow" in maps.read(),
                tuple(id(o) in walked for o in (engine.__dict__, pyarrow.__dict__, gc.__dict__, own)),
            )

    [(command, threads, arrow, walked)] = spark.sparkContext.parallelize([0], 1).mapPartitions(daemon).collect()
    assert "spark_integration._spark.daemon" in command
    assert (threads, arrow) == (1, True)
    assert walked == (False, False, False, True), "what the daemon imported frozen, the task's own walked"


def test_the_engines_import_without_a_thread_whatever_jemalloc_setting_the_user_has() -> None:
    """A process with the daemon's environment, from a user's own jemalloc setting, imports every
    engine and still runs a single thread; the user's setting is kept."""
    import os
    import subprocess
    import sys

    environ = {**os.environ, "JE_ARROW_MALLOC_CONF": "narenas:2"}
    without_threads(environ)
    assert environ["JE_ARROW_MALLOC_CONF"] == "narenas:2,background_thread:false"
    imports = f"from spark_integration._spark.daemon import preload; preload({list(PRELOADED)!r})"
    count = "import os, sys; print(len(os.listdir('/proc/self/task')), 'pyarrow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", f"{imports}; {count}"], env=environ, capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "1 True"), done.stderr


def test_an_interpreter_without_an_engine_preloads_the_others() -> None:
    import sys

    sys.modules.pop("json.tool", None)
    preload(["events_manifest_no_such_engine", "json.tool"])
    assert "json.tool" in sys.modules and "events_manifest_no_such_engine" not in sys.modules
