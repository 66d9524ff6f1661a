"""The jobs as processes of their own, where the process is the point: a run killed (SIGKILL to its
process group, the JVM and its Python workers too) while Spark's workers store its puts, and a
streaming query killed mid-batch, each finished by the next start; a second run refused while the
first, started by a venv's python without activation, writes; a failing job's one line, Spark's own
log silent. Each step a driver reaches is killed in the suite's own process too (`tests.crashes`)."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyspark

from events_manifest import SqliteManifest
from spark_integration import shred
from tests.commands import env, error_line, events_manifest, killed_at, scratch, shredder, told, wait_for
from tests.dedup_helpers import dedup_stream, stream_ids, write_json
from tests.shred_helpers import (
    atomic,
    generated_batch,
    line,
    read_bad,
    read_output,
    rerun_gives_the_unbroken_output,
    write_input,
    written,
)

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def test_a_run_killed_during_its_puts_is_finished_by_a_rerun_of_its_input_only(spark: Any, tmp_path: Path) -> None:
    """Killed during its puts (some events stored, nothing delivered). From that state on disk:
    (1) the input gains a line and the rerun goes to a new output folder: the ledger knows the
    killed run read other files and refuses (its stored events and the grown input's would be mixed
    up); once the killed run is cleaned, the grown input is delivered whole, no event of the killed
    run dropped as a duplicate. (2) From the same state again, a rerun of the same input gives the
    output of an unbroken run."""
    source = generated_batch(tmp_path / "batch")
    shred(
        spark, source, str(tmp_path / "batch/out"), str(tmp_path / "batch/bad"), manifest=f"sqlite:///{tmp_path}/u.db"
    )
    unbroken = written(tmp_path / "batch")
    work = tmp_path / "work"
    inputs = work / "in"
    shutil.copytree(source, inputs)
    flags = ["--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad", "--manifest", "sqlite://m.db"]
    killed_at("puts", work, *flags)
    with SqliteManifest(work / "m.db") as manifest:
        [killed] = manifest.runs()
        assert not killed.finished and manifest.lookup(*_first_pair(manifest)) is not None, "its puts were stored"
    copy = tmp_path / "copy"
    db = _copy_manifest(work, copy)

    late = line(str(uuid.uuid4()), "FP", etl="2026-11-01 05:00:00.000")
    (inputs / "late.tsv").write_text(late + "\n")
    other = ["--input-folder", str(inputs), "--output-folder", "out2", "--bad-folder", "bad2", "--manifest", db]
    refused = shredder(copy, *other)
    assert refused.returncode == 1 and "names another input than the run of" in refused.stderr
    assert f"events-manifest clean --etl-time '{killed.etl_time:%Y-%m-%d %H:%M:%S}'" in refused.stderr
    assert not (copy / "out2").exists() and not (copy / "bad2").exists()

    cleaned = events_manifest(copy, "clean", "--etl-time", f"{killed.etl_time:%Y-%m-%d %H:%M:%S}", "--manifest", db)
    assert cleaned.returncode == 0, cleaned.stderr
    done = shredder(copy, *other)
    assert done.returncode == 0, told(done.stderr)
    shred(spark, str(inputs), str(tmp_path / "fresh"), str(tmp_path / "fresh-bad"), manifest=f"{db}-fresh")
    assert read_output(copy / "out2") == read_output(tmp_path / "fresh"), "as a run on an empty manifest: whole"
    assert atomic(late) in read_output(copy / "out2")["atomic-events"]
    assert read_bad(copy / "bad2") == unbroken["bad"]

    (inputs / "late.tsv").unlink()
    rerun_gives_the_unbroken_output(work, flags, unbroken, work / "m.db")


def _copy_manifest(folder: Path, into: Path) -> str:
    """The URL of a copy in `into` of the SQLite manifest a killed run left in `folder` (its journal
    too): the same state, for a second continuation (an open connection never sees it replaced)."""
    into.mkdir()
    for path in folder.glob("m.db*"):
        shutil.copy2(path, into / path.name)
    return f"sqlite:///{into}/m.db"


def _first_pair(manifest: Any) -> tuple[str, str]:
    """An (event id, fingerprint) the SQLite manifest holds, read from its table."""
    row = manifest._connection().execute("SELECT event_id, fingerprint FROM events_manifest LIMIT 1").fetchone()
    return row[0], row[1]


def test_a_second_run_into_a_folder_being_written_is_refused_at_once(spark: Any, tmp_path: Path) -> None:
    """The first run is a process of its own, started as `/path/venv/bin/python -m ...` with the
    venv not activated (not on PATH): its Python workers run on the driver's interpreter, not on
    `python3` from PATH, and it completes while the second, in this process, is refused."""
    write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP")])
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    child = {k: v for k, v in env().items() if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"}}
    command = [sys.executable, "-m", "spark_integration.shredder", "--input-folder", "in"]
    first = subprocess.Popen(
        [*command, "--output-folder", "out", "--bad-folder", "bad", "--manifest", f"sqlite:///{tmp_path}/m.db"],
        cwd=tmp_path,
        env={**child, "PATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for((tmp_path / "out" / "_claim.json").exists, "the first run claiming its folder", first)
        second = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad2")
        assert "output folder [out] is being written by another run" in error_line(second)
    finally:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, told(err)
    assert len(read_output(tmp_path / "out")["atomic-events"]) == 2, "each event once"
    assert not (tmp_path / "bad2").exists() and not (tmp_path / "out" / "_claim.json").exists()


def test_a_failing_job_says_one_line_and_no_stack_trace(tmp_path: Path) -> None:
    """As a user runs it: a corrupt gzip input. Spark's own log (the task failure and its Java stack
    trace) stays silent; the job's one line says what happened."""
    (tmp_path / "gz").mkdir()
    good = gzip.compress((line(B, "FP") + "\n").encode())
    (tmp_path / "gz" / "part-0.tsv.gz").write_bytes(good[: len(good) // 2])
    flags = ["--input-folder", "gz", "--output-folder", "out", "--bad-folder", "bad", "--manifest", "sqlite://m.db"]
    done = subprocess.run(
        [sys.executable, "-m", "spark_integration.shredder", *flags],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "part-0.tsv.gz could not be read" in error_line(done)
    frames = [x for x in done.stderr.splitlines() if x.lstrip().startswith(("at ", "Caused by", "java.", "org."))]
    assert frames == [], done.stderr[-3000:]  # the frames themselves: what the test refuses
    others = [x for x in done.stderr.splitlines() if x.strip() and not x.startswith("shredder: error:")]
    assert others == [], done.stderr[-3000:]  # not even Spark 4's JVM's notice of incubator modules
    spark_own = {"artifacts"} if pyspark.__version__ == "4.0.0" else set()  # Spark 4.0.0's, in the working folder
    left = sorted(p.name for p in tmp_path.iterdir() if p.name not in spark_own)
    assert left == ["gz", "m.db"], "no output folder left behind"


STREAM_JOB = """
import sys, time
from pathlib import Path
from spark_integration import local_session
from spark_integration._dedup.stream import deduplicate_stream

root, manifest = Path(sys.argv[1]), sys.argv[2]
spark = local_session("local[2]", "killed-stream")

def sink(df, batch_id):
    df.write.mode("overwrite").json(str(root / "ours" / f"batch={batch_id}"))
    if batch_id == 1:
        (root / "batch-1-written").touch()
        time.sleep(600)  # killed here, before the batch is committed

stream = spark.readStream.schema("id string, ts timestamp, payload string").json(str(root / "source"))
deduplicate_stream(stream, key=["id"], fingerprint=["id"], manifest=manifest,
                   checkpoint_location=str(root / "ours-checkpoint"), sink=sink,
                   trigger={"availableNow": True}).awaitTermination()
"""


def test_a_query_killed_mid_batch_restarts_without_loss_or_doubles(spark: Any, tmp_path: Path) -> None:
    """SIGKILL to a separate streaming process (JVM included) after batch 1's sink wrote; the
    restarted query replays batch 1 with its recorded etl time: every id exactly once."""
    source, manifest = tmp_path / "source", f"sqlite:///{tmp_path}/m.db"
    ts = "2026-11-01T10:00:00"
    write_json(source, "1", [{"id": f"e{n}", "ts": ts, "payload": "p"} for n in range(20)])
    dedup_stream(spark, source, tmp_path, manifest)  # batch 0
    write_json(source, "2", [{"id": f"e{n}", "ts": ts, "payload": "p"} for n in range(10, 40)])
    job = subprocess.Popen(
        [sys.executable, "-c", STREAM_JOB, str(tmp_path), manifest],
        env={**os.environ, **scratch(tmp_path)},  # the killed JVM's scratch folders: in tmp_path, then removed
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for((tmp_path / "batch-1-written").exists, "the streaming job reaching batch 1", job)
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        job.wait()
        shutil.rmtree(tmp_path / "spark-scratch", ignore_errors=True)
    dedup_stream(spark, source, tmp_path, manifest)  # restart from the checkpoint
    assert stream_ids(spark, tmp_path / "ours") == sorted(f"e{n}" for n in range(40))
    assert stream_ids(spark, tmp_path / "ours" / "batch=1") == sorted(f"e{n}" for n in range(20, 40))
