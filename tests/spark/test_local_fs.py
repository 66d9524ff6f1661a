"""The suite's Spark session's local file system (`tests/local_fs.py`): Hadoop's, but for two steps
done in the JVM rather than by a process each. What it leaves on disk and what it answers are what
the one a session otherwise gets leaves and answers (pip's pyspark: Hive's proxy of Hadoop's), through
either of Hadoop's APIs: `FileSystem` (Spark's writers, the storage) and `FileContext` (Spark's
streaming checkpoints)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests import local_fs

pytestmark = pytest.mark.every_line


def _left(root: Path) -> dict[str, tuple[int, str]]:
    """Each file and folder below `root`: its mode, and where a link points."""
    return {
        str(path.relative_to(root)): (
            stat.S_IMODE(path.lstat().st_mode),
            str(Path(os.readlink(path)).relative_to(root)) if path.is_symlink() else "",
        )
        for path in sorted(root.rglob("*"))
    }


def test_it_leaves_and_answers_what_hadoop_s_own_does_through_either_api(spark: Any, tmp_path: Path) -> None:
    if not local_fs.settings():
        pytest.skip("no Java compiler: the session runs Hadoop's own local file system")
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    hadoop = jvm.org.apache.hadoop
    root, conf = jvm.java.net.URI("file:///"), spark.sparkContext._jsc.hadoopConfiguration()
    own = hadoop.conf.Configuration(conf)
    own.unset("fs.file.impl")  # Hadoop's service loader's choice
    own.set("fs.AbstractFileSystem.file.impl", "org.apache.hadoop.fs.local.LocalFs")  # core-default.xml's
    systems = {"hadoop": hadoop.fs.FileSystem.newInstance(root, own), "ours": hadoop.fs.FileSystem.get(root, conf)}
    contexts = {name: hadoop.fs.FileContext.getFileContext(root, c) for name, c in (("hadoop", own), ("ours", conf))}
    assert systems["ours"].getClass().getName() == local_fs.CLASS  # Hadoop's: Hive's proxy of its local one
    assert contexts["ours"].getDefaultFileSystem().getClass().getName() == f"{local_fs.CLASS}$Context"
    overwrite = gateway.new_array(hadoop.fs.Options.Rename, 1)
    overwrite[0] = hadoop.fs.Options.Rename.OVERWRITE
    answers = {}
    for name, system in systems.items():
        base = tmp_path / name

        def at(relative: str, base: Path = base) -> Any:
            return hadoop.fs.Path(f"file:{base}/{relative}")

        system.mkdirs(at("a/b"))
        out = system.create(at("a/b/part-0"))
        out.write(b"lines\n")
        out.close()
        system.setPermission(at("a"), hadoop.fs.permission.FsPermission(0o750))
        context = contexts[name]
        flags = jvm.java.util.EnumSet.of(hadoop.fs.CreateFlag.CREATE)
        context.create(at("a/offsets.tmp"), flags, gateway.new_array(hadoop.fs.Options.CreateOpts, 0)).close()
        context.rename(at("a/offsets.tmp"), at("a/b/part-0"), overwrite)
        (base / "link").symlink_to(base / "a")
        answers[name] = [
            (status.isSymlink(), status.isDirectory(), status.getLen(), status.getPermission().toShort())
            for status in (context.getFileLinkStatus(at(path)) for path in ("link", "a", "a/b/part-0"))
        ]
        with pytest.raises(Exception, match="FileNotFoundException"):
            context.getFileLinkStatus(at("missing"))
    systems["hadoop"].close()  # a new instance, not the session's cached one
    assert answers["ours"] == answers["hadoop"]
    assert _left(tmp_path / "ours") == _left(tmp_path / "hadoop")
    assert _left(tmp_path / "ours")["a"][0] == 0o750
