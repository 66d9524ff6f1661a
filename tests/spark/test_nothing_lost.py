"""Nothing lost, whatever is typed, round two: outputs that cannot clobber, reruns that cannot
double, inputs with nothing to read, read-only commands that write nothing, messages that fit on
one line. The `events-manifest` command runs as a process of its own (it is cheap); the shred job
in this process, on the suite's Spark session, but for the one case where its own stderr is the
point. Each case checks the files on disk afterwards."""

from __future__ import annotations

import gzip
import os
import sqlite3
import stat
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest import ManifestUnavailableError, SqliteManifest
from events_manifest.model import PutBatch, to_epoch_seconds
from events_manifest.runs import STARTED, Run
from spark_integration import shred
from tests.commands import env, error_line, process, shredder
from tests.shred_helpers import line, read_bad, read_output, write_input

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m events_manifest ARGS`, a process of its own."""
    return process("events_manifest", cwd, *args, timeout=120)


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry below a folder: its kind (mode bits) and, for a regular file, its bytes (but a
    SQLite file's shared-memory index, which opening the file rewrites)."""
    return {
        str(p.relative_to(folder)): (stat.S_IFMT(p.lstat().st_mode), p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
        if not p.name.endswith("-shm")
    }


@pytest.fixture
def dedup_input(tmp_path: Path) -> Path:
    """An NDJSON input and a manifest that holds one earlier run."""
    (tmp_path / "in.ndjson").write_text('{"id": 1}\n{"id": 2}\n')
    (tmp_path / "earlier.ndjson").write_text('{"id": 0}\n')
    done = cli(tmp_path, "dedup", "earlier.ndjson", "--key", "id", "--manifest", "sqlite://m.db", "--unique", "e-u")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_dedup_outputs_never_replace_what_is_not_a_file_of_their_own(dedup_input: Path) -> None:
    cwd = dedup_input
    os.mkfifo(cwd / "fifo")
    os.mknod(cwd / "device", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a character device, as /dev/null
    (cwd / "folder").mkdir()
    os.symlink(cwd / "in.ndjson", cwd / "link-to-input")
    os.link(cwd / "m.db", cwd / "hard-link-to-manifest")
    before = snapshot(cwd)
    refused = {
        "fifo": ("--unique", "[fifo] is a FIFO, not a regular file"),
        "device": ("--duplicates", "[device] is a device, not a regular file"),
        "folder": ("--errors", "[folder] is a folder: give a file name"),
        "m.db": ("--unique", "--unique [m.db] is also the manifest file"),
        "m.db-wal": ("--errors", "--errors [m.db-wal] is also the manifest file"),
        "link-to-input": ("--expired", "--expired [link-to-input] is also the input"),
        "hard-link-to-manifest": ("--unique", "--unique [hard-link-to-manifest] is also the manifest file"),
    }
    for target, (flag, message) in refused.items():
        done = cli(cwd, "dedup", "in.ndjson", "--key", "id", "--manifest", "sqlite://m.db", flag, target)
        assert done.returncode == 1 and message in done.stderr, (target, done.stderr)
        assert snapshot(cwd) == before, target
    assert stat.S_ISFIFO((cwd / "fifo").stat().st_mode) and stat.S_ISCHR((cwd / "device").stat().st_mode)
    with SqliteManifest(cwd / "m.db") as manifest:
        assert [run.state for run in manifest.runs()] == ["finished"], "the manifest still opens, untouched"


def test_a_killed_dedup_leaves_no_partial_file_behind_the_next_run(dedup_input: Path) -> None:
    cwd = dedup_input
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = cwd / f".u.ndjson.{os.uname().nodename}@{int(dead.stdout)}.0123abcd.partial"
    live = cwd / f".u.ndjson.{os.uname().nodename}@{os.getpid()}.4567cdef.partial"  # this process: alive
    stale.write_text('{"id": 1}\n')
    live.write_text('{"id": 1}\n')
    done = cli(cwd, "dedup", "in.ndjson", "--key", "id", "--manifest", "sqlite://m.db", "--unique", "u.ndjson")
    assert done.returncode == 0, done.stderr
    assert not stale.exists() and live.exists(), "only the file of a writer that is gone is removed"
    assert (cwd / "u.ndjson").read_text() == '{"id": 1}\n{"id": 2}\n'


def test_dedup_reruns_are_refused_unless_on_purpose_and_the_advice_names_real_flags(dedup_input: Path) -> None:
    cwd = dedup_input
    flags = ["--key", "id", "--manifest", "sqlite://m.db"]
    again = cli(cwd, "dedup", "earlier.ndjson", *flags, "--unique", "again")
    assert again.returncode == 1 and "was delivered already" in again.stderr and "--rerun" in again.stderr
    assert not (cwd / "again").exists()
    rerun = cli(cwd, "dedup", "earlier.ndjson", *flags, "--unique", "again", "--rerun")
    assert rerun.returncode == 0 and (cwd / "again").read_text() == '{"id": 0}\n', "its records come out again"
    future = cli(cwd, "dedup", "in.ndjson", *flags, "--etl-time", "3026-01-01T00:00:00")
    assert future.returncode == 1 and "etl time 3026-01-01 00:00:00 is more than a day ahead of now" in future.stderr

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with SqliteManifest(cwd / "m.db") as manifest:  # a run of another item, killed after its puts
        etl, now = datetime(2026, 11, 1, 5), int(time.time())
        owner = f"{os.uname().nodename}:{int(dead.stdout)}"
        assert manifest._swap_run(None, Run(to_epoch_seconds(etl), "topic-3", STARTED, now, None, owner, now))
        assert manifest.put(A, "FP", etl)
    refused = cli(cwd, "dedup", "in.ndjson", *flags, "--unique", "u")
    assert refused.returncode == 1 and "--item-id 'topic-3'" in refused.stderr
    (cwd / "topic.ndjson").write_text('{"id": 3}\n')
    advised = cli(cwd, "dedup", "topic.ndjson", *flags, "--unique", "u", "--item-id", "topic-3")
    assert advised.returncode == 0, advised.stderr  # the flag the advice names exists, and finishes that run


def test_read_only_commands_create_nothing(tmp_path: Path) -> None:
    for args in (["runs"], ["processing", "list", "--table", "processing"]):
        done = cli(tmp_path, *args, "--manifest", "sqlite://nothing-here.db")
        assert done.returncode == 1 and "no manifest at nothing-here.db: nothing to read there" in done.stderr
    assert list(tmp_path.iterdir()) == [], "no file, no table"
    with SqliteManifest(tmp_path / "m.db"):
        pass
    done = cli(tmp_path, "processing", "list", "--table", "processing", "--manifest", f"sqlite:///{tmp_path}/m.db")
    assert done.returncode == 1 and "holds no processing table processing" in done.stderr
    with sqlite3.connect(tmp_path / "m.db") as db:
        assert "processing" not in {row[0] for row in db.execute("SELECT name FROM sqlite_master")}


def test_a_sqlite_file_of_another_layout_is_named_as_such(tmp_path: Path) -> None:
    with SqliteManifest(tmp_path / "m.db"):
        pass
    with sqlite3.connect(tmp_path / "m.db") as db:  # a manifest file another tool rebuilt its own way
        db.execute("DROP TABLE events_manifest_runs")
        db.execute("CREATE TABLE events_manifest_runs (etl_time INTEGER PRIMARY KEY, label TEXT)")
    before = (tmp_path / "m.db").read_bytes()
    done = cli(tmp_path, "runs", "--manifest", f"sqlite:///{tmp_path}/m.db")
    assert done.returncode == 1 and "is a SQLite file of another layout: its table events_manifest_runs has the "
    assert "columns (etl_time, label)" in done.stderr and "no such column" not in done.stderr
    assert (tmp_path / "m.db").read_bytes() == before


@pytest.fixture
def shred_batch(spark: Any, tmp_path: Path) -> Path:
    """A small batch in `in`, and its good output in `out` and `bad`, on the manifest `m.db`."""
    write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP"), "broken"])
    done = shredder(tmp_path, *_shred_flags("out", "bad"))
    assert done.returncode == 0, done.stderr
    return tmp_path


def _shred_flags(out: str, bad: str, source: str = "in") -> list[str]:
    return ["--input-folder", source, "--output-folder", out, "--bad-folder", bad, "--manifest", "sqlite://m.db"]


def test_the_shred_jobs_report_cannot_replace_an_input_the_manifest_or_a_folder(shred_batch: Path) -> None:
    cwd = shred_batch
    (cwd / "reports").mkdir()
    before = snapshot(cwd)
    refused = {
        "in/part-00000.tsv": "--report [in/part-00000.tsv] is inside the input [in]",
        "m.db": "--report [m.db] is also the manifest file",
        "reports": "--report [reports] is a folder: give a file name",
        "out2/report.html": "--report [out2/report.html] is inside the output folder [out2]",
    }
    for report, message in refused.items():
        done = shredder(cwd, *_shred_flags("out2", "bad2"), "--rerun", "--report", report)
        assert message in error_line(done), report
        assert snapshot(cwd) == before, report


def test_a_delivered_input_is_not_delivered_again_by_mistake(shred_batch: Path) -> None:
    cwd = shred_batch
    before = snapshot(cwd)
    again = error_line(shredder(cwd, *_shred_flags("out2", "bad2")))
    assert "was delivered already, by the run with etl time 2026-11-01 06:00:00 into file:" in again
    assert f"{cwd}/out" in again and "--rerun" in again
    assert snapshot(cwd) == before
    future = shredder(cwd, *_shred_flags("out2", "bad2"), "--etl-time", "3026-01-01 00:00:00")
    assert "etl time 3026-01-01 00:00:00 is more than a day ahead of now" in error_line(future)
    assert snapshot(cwd) == before
    done = shredder(cwd, *_shred_flags("out2", "bad2"), "--rerun")
    assert done.returncode == 0, done.stderr
    assert read_output(cwd / "out2") == read_output(cwd / "out"), "on purpose: the same events again"


def test_overwrite_refuses_an_input_with_nothing_to_read(shred_batch: Path) -> None:
    cwd = shred_batch
    (cwd / "empty").mkdir()
    (cwd / "hidden").mkdir()
    (cwd / "hidden" / ".part-0.tsv").write_text(line(A, "FP") + "\n")
    (cwd / "hidden" / "_SUCCESS").write_text("")
    (cwd / "nested" / "sub").mkdir(parents=True)
    (cwd / "nested" / "sub" / "part-0.tsv").write_text(line(A, "FP") + "\n")
    before = read_output(cwd / "out"), read_bad(cwd / "bad")
    found = {
        "empty": "input [empty]: nothing at all: no data for the job to read",
        "hidden": "input [hidden]: hidden files (.part-0.tsv, _SUCCESS): no data",
        "nested": "input [nested]: subfolders (sub/): no data",
    }
    for source, message in found.items():
        done = shredder(cwd, *_shred_flags("out", "bad", source), "--overwrite", "--item-id", source)
        assert message in error_line(done), source
        assert (read_output(cwd / "out"), read_bad(cwd / "bad")) == before, "the earlier output is whole"


class FailingWithTwoLines(SqliteManifest):
    """A store that fails after a batch's puts, with a message of several lines."""

    def _put_batch(self, batch: PutBatch) -> list[bool | Any]:
        super()._put_batch(batch)
        raise ManifestUnavailableError("the store went away\nat line two\nand three")


def test_a_processing_table_keeps_a_one_line_reason(spark: Any, tmp_path: Path) -> None:
    source = str(write_input(tmp_path / "in", [line(A, "FP")]))
    with pytest.raises(ManifestUnavailableError, match="went away"):
        shred(
            spark,
            source,
            str(tmp_path / "o"),
            str(tmp_path / "b"),
            manifest=FailingWithTwoLines(tmp_path / "m.db"),
            processing_table="processing",
            item_id="batch-1",
        )
    with SqliteManifest(tmp_path / "m.db") as manifest:
        [record] = manifest.processing_manifest("processing").items()
        assert (record.state, record.detail) == ("failed", "ManifestUnavailableError: the store went away")
        assert [run.state for run in manifest.runs()] == ["failed"]


@pytest.mark.spark
@pytest.mark.process
def test_a_failing_job_says_one_line_and_no_stack_trace(tmp_path: Path) -> None:
    """As a user runs it: a corrupt gzip input. Spark's own log (the task failure and its Java stack
    trace) stays silent; the job's one line says what happened."""
    (tmp_path / "gz").mkdir()
    good = gzip.compress((line(B, "FP") + "\n").encode())
    (tmp_path / "gz" / "part-0.tsv.gz").write_bytes(good[: len(good) // 2])
    done = subprocess.run(
        [sys.executable, "-m", "spark_integration.shredder", *_shred_flags("out", "bad", "gz")],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "part-0.tsv.gz could not be read" in error_line(done)
    frames = [x for x in done.stderr.splitlines() if x.lstrip().startswith(("at ", "Caused by", "java.", "org."))]
    assert frames == [], done.stderr[-3000:]
    others = [x for x in done.stderr.splitlines() if x.strip() and not x.startswith("shredder: error:")]
    assert others in ([], ["WARNING: Using incubator modules: jdk.incubator.vector"]), done.stderr[-3000:]  # the JVM's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gz", "m.db"], "no output folder left behind"
