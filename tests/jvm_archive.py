"""The suite's JVM options, and a class-data-sharing archive of the classes a Spark job's JVM loads
(the JDK's CDS, `-XX:SharedArchiveFile`): made once per environment and JDK by the
transformer's demo on the sample batches (`python -m tests.jvm_archive`, which `nox -s
"integration(4.3)"` runs), then mapped in by every JVM the tests start (a spark-submit, a command
run as a process), which starts about a quarter sooner (docs/development.md). Without the archive
the options are the same but for it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=512m -XX:-UseCodeCacheFlushing"
"""On small data a JVM's start-up, not its throughput, is the cost: the quick JIT alone and one GC
thread save a third of it on two cores. A code cache that keeps what the JIT compiled: the suite's
Spark session runs every test's queries, and the JDK's sweeper otherwise spends seconds flushing
code the next test compiles again (a tenth of the session's CPU, docs/development.md)."""
QUIET = "-Xlog:disable"
"""An archive the JVM cannot map (a JDK updated since) is skipped without a word on its stdout."""


def archive() -> Path:
    """Where this environment's archive is: one per pyspark installation (named by its folder),
    made over its jars as they are and this JDK (the JVM maps an archive only over the class path
    and the JDK it was made with, unchanged since)."""
    import pyspark

    jdk = Path(jdk_tool("java") or "java").resolve()
    installed = Path(pyspark.__file__).parent
    made_over = json.dumps([pyspark.__version__, _mtime(installed / "jars"), str(jdk), _mtime(jdk), BASE])
    return FOLDER / f"spark-{digest(str(installed))}-{digest(made_over)}.jsa"


FOLDER = ROOT / ".cache" / "jvm"
"""What the suite makes for its JVMs: this archive, and the local file system's classes (`tests.local_fs`)."""


def jdk_tool(name: str) -> str | None:
    """A tool of the JDK whose `java` Spark's launcher runs: `JAVA_HOME`'s, else the `PATH`'s."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which(name, path=os.pathsep.join(filter(None, [home and f"{home}/bin", os.environ.get("PATH")])))


def digest(text: str) -> str:
    """A short name for what an artefact was made over."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


def options() -> str:
    """The suite's `SPARK_SUBMIT_OPTS`: `BASE`, with the archive when it was made."""
    try:
        made = archive()
    except ImportError:  # no pyspark: no JVM to start
        return BASE
    return f"{BASE} -XX:SharedArchiveFile={made} {QUIET}" if made.is_file() else BASE


def make() -> Path:
    """The archive, made by the transformer's demo on the sample batches (its JVM writes the classes
    it loaded as it exits) unless it is there; written beside and renamed into place."""
    target = archive()
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    environment = {**os.environ, "SPARK_SUBMIT_OPTS": f"{BASE} -XX:ArchiveClassesAtExit={partial} {QUIET}"}
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "spark_integration.demo", "--job", "transformer", "--out", folder]
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise SystemExit(f"the JVM's class archive was not made: {done.stderr[-2000:]}")
    partial.replace(target)
    for stale in FOLDER.glob(f"{target.name.rsplit('-', 1)[0]}-*.jsa"):  # this installation's, made before
        if stale != target:
            stale.unlink()
    return target


if __name__ == "__main__":
    print(f"the suite's JVMs map {make()}")
