"""The transformer on a Spark standalone cluster: a master and two workers on 127.0.0.1, started
with Spark's own classes, whose PATH holds no project environment; the executors get Python as
users ship it, a venv-pack archive of the project's wheel (`--archives env.tar.gz#environment`,
which `nox -s integration` builds). The same output as a local session; an environment the
executors cannot use is one line, and the run after the fix writes what an unbroken run writes.
The shred job's executors run the installed wheel in `test_wheel.py` (the README's demo from it)
and its driver under spark-submit in `test_submit.py`: shipping an environment is the same
whichever command's code the executors run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events_manifest.testing import LocalServer
from events_manifest.testing._servers import free_port
from spark_integration import transformer as transformer_module
from tests.commands import env, told, wait_for
from tests.integration.conftest import KEYS, S3, spark_submit
from tests.integration.outputs import config, manifest, reference, s3_run
from tests.transformer_helpers import same

ENVIRONMENT = os.environ.get("EVENTS_MANIFEST_EXECUTOR_ENV")
if ENVIRONMENT is None:
    pytest.skip("the executors' environment archive: run `nox -s integration`", allow_module_level=True)
WORKERS_PATH = "/usr/bin:/bin"
"""The workers' PATH: the machine's own programs (java, a system python3 without the project)."""


def spark_class(name: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    """A daemon of the cluster (`org.apache.spark.deploy.<name>`), started as Spark's scripts start it,
    its log in `log`."""
    import pyspark

    home = Path(pyspark.__file__).parent
    environment = {
        "PATH": WORKERS_PATH,
        "HOME": os.environ.get("HOME", "/tmp"),
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        **({"JAVA_HOME": os.environ["JAVA_HOME"]} if "JAVA_HOME" in os.environ else {}),
    }
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(home / "bin" / "spark-class"), f"org.apache.spark.deploy.{name}", *args],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A standalone master and two workers (one core each), its URL and the workers' folder."""
    base = tmp_path_factory.mktemp("cluster")
    port = free_port()
    master_log = base / "master.log"
    daemons = [
        spark_class(
            "master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
            log=master_log,
        )
    ]  # fmt: skip
    url = f"spark://127.0.0.1:{port}"
    try:
        wait_for(lambda: "ALIVE" in master_log.read_text(), "the master", daemons[0])
        for n in (1, 2):
            daemons.append(
                spark_class(
                    "worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "2g",
                    "--webui-port", str(free_port()), "--work-dir", str(base / f"worker-{n}"), url,
                    log=base / f"worker-{n}.log",
                )
            )  # fmt: skip
        wait_for(lambda: master_log.read_text().count("Registering worker") == 2, "two workers", daemons[0])
        yield url, base
    finally:
        for daemon in daemons:
            os.killpg(daemon.pid, signal.SIGTERM)
        for daemon in daemons:
            daemon.wait(timeout=60)
        remove_finished_apps(base)


def remove_finished_apps(base: Path) -> None:
    """Each application's folders on the workers: an unpacked environment is half a gigabyte per
    worker, which a machine with little disk left cannot hold for every application of a run."""
    for folder in base.glob("worker-*/app-*"):
        shutil.rmtree(folder, ignore_errors=True)


def submit(
    cluster: tuple[str, Path], module_file: str, *args: str, server: LocalServer, cwd: Path, shipped: list[str]
) -> subprocess.CompletedProcess[str]:
    """`spark-submit` of a job to the cluster, the driver on this interpreter, the executors' Python
    as `shipped` options say (an archive and `spark.pyspark.python`, or nothing). The applications
    before it have ended: their folders go first."""
    remove_finished_apps(cluster[1])
    options = [
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.executor.memory=1g",
        "--conf", f"spark.executorEnv.AWS_ACCESS_KEY_ID={KEYS['access_key']}",
        "--conf", f"spark.executorEnv.AWS_SECRET_ACCESS_KEY={KEYS['secret_key']}",
        *shipped,
    ]  # fmt: skip
    command = spark_submit(module_file, *args, server=server, master=cluster[0], options=options)
    child = {key: value for key, value in env().items() if not key.startswith("PYSPARK_")}
    child["SPARK_LOCAL_IP"] = "127.0.0.1"
    return subprocess.run(command, cwd=cwd, env=child, capture_output=True, text=True, timeout=600, check=False)


ARCHIVE = ["--archives", f"{ENVIRONMENT}#environment", "--conf", "spark.pyspark.python=./environment/bin/python"]


def said(done: subprocess.CompletedProcess[str], prog: str) -> str:
    """The one line of a refused job (spark-submit sends the Python driver's stderr to stdout)."""
    assert done.returncode == 1, told(done.stdout, done.stderr)
    ours = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(f"{prog}: error:")]
    assert len(ours) == 1 and "Traceback" not in done.stdout, told(done.stdout)
    return ours[0]


@pytest.mark.every_line
def test_the_transformer_on_a_cluster_writes_what_a_local_session_writes(
    cluster: tuple[str, Path], runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, spark: Any
) -> None:
    """On S3 with a DynamoDB manifest, the executors unpacking the shipped environment. Before it,
    on Spark 4, the mistakes an operator makes first, each one line that says what to ship, none
    leaving anything in the way: a corrupt archive, no archive (the workers' own python3 lacks the
    project), an interpreter path that is not in the archive (a small one: each worker unpacks it
    for nothing). (On 3.5, the run alone: each mistake costs the cluster half a minute, and how a
    worker's failure is worded is held on every line by tests/spark/test_failures.py.)"""
    expected = reference(runs, dynalite)
    (runs / "s3.hocon").write_text(config(s3.url("in"), s3.url("out")))
    flags = ["--iglu-config", "iglu.json", "--config", "s3.hocon", "--manifest", manifest(dynalite)]
    (runs / "corrupt.tar.gz").write_bytes(os.urandom(4096))
    with tarfile.open(runs / "small.tar.gz", "w:gz") as small:  # what it holds does not matter: not the path
        small.add(runs / "iglu.json", arcname="bin/iglu.json")
    mistakes = {
        "unpack an archive of --archives (corrupt.tar.gz: not in gzip format)": [
            "--archives", f"{runs / 'corrupt.tar.gz'}#environment",
        ],
        "the executors' Python cannot import events_manifest": [],
        "the executors cannot start Python ./env/bin/python": [
            "--archives", f"{runs / 'small.tar.gz'}#environment", "--conf", "spark.pyspark.python=./env/bin/python",
        ],
    }  # fmt: skip
    once = ["--conf", "spark.task.maxFailures=1"]  # the same line as after Spark's four tries, without three of them
    for words, shipped in mistakes.items() if not spark.version.startswith("3.") else ():
        done = submit(
            cluster, transformer_module.__file__, *flags, server=s3_server, cwd=runs, shipped=[*shipped, *once]
        )
        line = said(done, "transformer")
        assert words in line and "--archives env.tar.gz#environment" in line, line
        delivered = [key for key in s3.keys("out/") if not key.endswith("/") and "/.staging" not in key]
        assert delivered == [], f"nothing delivered after: {words}"

    done = submit(cluster, transformer_module.__file__, *flags, server=s3_server, cwd=runs, shipped=ARCHIVE)
    assert done.returncode == 0, told(done.stdout, done.stderr)
    for name in ("run=1", "run=2"):
        found = s3_run(s3, name)
        same(found, expected[name])
        assert not [n for n in found["names"] if n.startswith((".staging", "_claim"))], "nothing left behind"
    unpacked = sorted(cluster[1].glob("worker-*/app-*/*/environment/bin/python"))
    assert {path.parts[-6] for path in unpacked} == {"worker-1", "worker-2"}, "both workers ran the archive"
