"""The suite's Spark session's local file system: Hadoop's, with two of its steps done in the JVM
(`local_fs/InProcessChmodFileSystem.java`) rather than by a process each: a file's or folder's
permissions set (a `chmod` for each file and folder a write makes, where Hadoop's native library,
which pip's pyspark does not ship, would call chmod itself) and whether a path is a link (a
`readlink` at each rename of a streaming checkpoint's files): about a twentieth of the README's
suite (docs/development.md). Compiled once per environment and source
(`.cache/jvm/`); the commands the tests start as processes, and the integration tests' sessions,
keep Hadoop's own, as users run them. Without a Java compiler, Hadoop's own everywhere."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tests.jvm_archive import FOLDER, digest, jdk_tool
from tests.once import exclusive

SOURCE = Path(__file__).resolve().parent / "local_fs" / "InProcessChmodFileSystem.java"
CLASS = "events_manifest_tests.InProcessChmodFileSystem"


def settings() -> dict[str, str]:
    """The Spark settings of a local session that uses it (none without `javac`)."""
    classes = _compiled()
    if classes is None:
        return {}
    return {
        "spark.driver.extraClassPath": str(classes),
        "spark.hadoop.fs.file.impl": CLASS,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": f"{CLASS}$Context",
    }


def _compiled() -> Path | None:
    """The folder of the compiled classes, made unless there: against this environment's Hadoop, by
    the first of the suite's processes to ask (the others wait for it under a lock, rather than each
    run the compiler at once), written beside and renamed into place (a compile cut short leaves none)."""
    import pyspark

    javac = jdk_tool("javac")
    if javac is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    made_over = "\0".join([SOURCE.read_text(), str(jars), *sorted(p.name for p in jars.glob("hadoop-*.jar"))])
    target = FOLDER / f"local-fs-{digest(made_over)}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(target.parent / f"{target.name}.lock"):
        if not target.is_dir():  # compiled by another process while this one waited
            _compile(javac, jars, target)
    return target


def _compile(javac: str, jars: Path, target: Path) -> None:
    """The classes compiled in a scratch folder beside `target`, then renamed into place."""
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch, "classes")
        command = [javac, "-nowarn", "-cp", f"{jars}/*", "-d", str(built), str(SOURCE)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{SOURCE.name} does not compile against {jars}:\n{done.stderr}")
        built.rename(target)


if __name__ == "__main__":  # the settings as `benchmarks/session_settings.py`'s flags
    print(" ".join(f"--set {key}={value}" for key, value in settings().items()))
