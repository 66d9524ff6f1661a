"""Nothing lost, whatever is typed, for the `events-manifest` command line (a process of its own,
then the files on disk): dedup outputs that cannot clobber, reruns that cannot double, a killed run
that leaves no partial file, read-only commands that write nothing, a SQLite file of another
layout named as such."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from events_manifest import SqliteManifest
from events_manifest._manifest.ledger import STARTED, Run
from events_manifest.model import to_epoch_seconds
from tests.commands import dead_pid, events_manifest, process

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


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
    stale = cwd / f".u.ndjson.{os.uname().nodename}@{dead_pid()}.0123abcd.partial"
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

    with SqliteManifest(cwd / "m.db") as manifest:  # a run of another item, killed after its puts
        etl, now = datetime(2026, 11, 1, 5), int(time.time())
        owner = f"{os.uname().nodename}:{dead_pid()}"
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


def test_dedup_refuses_to_overwrite_its_input_and_reads_invalid_utf8(tmp_path: Path) -> None:
    source = tmp_path / "in.ndjson"
    source.write_bytes(b'{"id": 1}\n\xff\xfe{"id": 2}\n{"id": 3}\n')
    before = source.read_bytes()
    db = f"sqlite:///{tmp_path}/m.db"
    done = events_manifest(tmp_path, "dedup", "in.ndjson", "--key", "id", "--manifest", db, "--unique", "in.ndjson")
    assert done.returncode == 1 and "--unique [in.ndjson] is also the input" in done.stderr
    assert source.read_bytes() == before and not (tmp_path / "m.db").exists(), "checked before the manifest opens"
    done = events_manifest(
        tmp_path, "dedup", "in.ndjson", "--key", "id", "--manifest", db, "--unique", "u.ndjson", "--errors", "e.ndjson"
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "u.ndjson").read_text().splitlines() == ['{"id": 1}', '{"id": 3}']
    plain = tmp_path / "plain"
    plain.touch()
    assert (tmp_path / "u.ndjson").stat().st_mode == plain.stat().st_mode, "the mode a plain open gives"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.ndjson", "in.ndjson", "m.db", "plain", "u.ndjson"]
    [error] = [json.loads(x) for x in (tmp_path / "e.ndjson").read_text().splitlines()]
    assert error["line"] == '\\xff\\xfe{"id": 2}' and "line 2 is not UTF-8" in error["reason"]
    missing = events_manifest(tmp_path, "dedup", "nope.ndjson", "--key", "id", "--manifest", db)
    assert (
        missing.returncode == 1
        and missing.stderr.strip() == "events-manifest: error: input [nope.ndjson] does not exist"
    )


def test_two_dedup_runs_in_one_second_get_their_own_etl_times(tmp_path: Path) -> None:
    (tmp_path / "a.ndjson").write_text('{"id": 1}\n')
    (tmp_path / "b.ndjson").write_text('{"id": 1}\n{"id": 2}\n')
    db = f"sqlite:///{tmp_path}/m.db"
    for name in "ab":
        done = events_manifest(
            tmp_path,
            "dedup",
            f"{name}.ndjson",
            "--key",
            "id",
            "--manifest",
            db,
            "--unique",
            f"u{name}",
            "--duplicates",
            f"d{name}",
        )
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "ub").read_text() == '{"id": 2}\n' and (tmp_path / "db").read_text() == '{"id": 1}\n'
    runs = events_manifest(tmp_path, "runs", "--manifest", db).stdout.splitlines()
    assert len(runs) == 2 and all("finished" in r for r in runs) and runs[0][:19] != runs[1][:19]
